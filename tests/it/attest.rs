//! `--format intoto --sign-key KEY`: the attestation as a DSSE envelope, verified by the in-toto
//! reference implementation (`in-toto` from PyPI, with securesystemslib) with the public key,
//! and refused by it when the statement is changed. The key is made by Python's `cryptography`
//! as `openssl genpkey -algorithm ed25519` would write it (PKCS#8 PEM).

use crate::common;

use common::{fixture, rigaudit, venv};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const IN_TOTO: &str = "in-toto==3.1.0";

/// Makes an ed25519 key pair in `dir` (key.pem, PKCS#8; pub.pem).
const KEYGEN: &str = r#"
import sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization as s
k = Ed25519PrivateKey.generate()
open(sys.argv[1] + "/key.pem", "wb").write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
open(sys.argv[1] + "/pub.pem", "wb").write(k.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo))
"#;

/// Verifies the envelope argv[1] with the public key argv[2] through in-toto's Envelope; prints
/// the keyid, the payload type and the statement on success, raises on failure.
const VERIFY: &str = r#"
import json, sys
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.signer import SSlibKey
from in_toto.models.metadata import Envelope
key = SSlibKey.from_crypto(load_pem_public_key(open(sys.argv[2], "rb").read()))
env = Envelope.from_dict(json.load(open(sys.argv[1])))
env.verify_signature(dict(key.to_dict(), keyid=key.keyid))
print(json.dumps({"keyid": key.keyid, "payloadType": env.payload_type,
                  "statement": json.loads(env.payload)}))
"#;

fn python(python: &Path, script: &str, args: &[&Path]) -> std::process::Output {
    Command::new(python)
        .args(["-c", script])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_signed_attestation_verifies_with_in_toto_and_a_changed_one_does_not() {
    let py = or_skip!(venv::or_skip("intoto-venv", &[IN_TOTO]));
    let dir = tempfile::tempdir().unwrap();
    assert!(python(&py, KEYGEN, &[dir.path()]).status.success());
    let env_file = dir.path().join("audit.intoto.json");
    let key = dir.path().join("key.pem");
    let page = fixture("mia-recipe-1104-2x");
    let args = [
        "verify",
        page.to_str().unwrap(),
        "--sign-key",
        key.to_str().unwrap(),
    ];
    let out = format!("--output={}", env_file.display());
    let r = rigaudit(&[&args[..], &[&out, "--format", "intoto"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    // What stdout shows is the same envelope as the file (ed25519 signatures are deterministic).
    assert_eq!(r.stdout, std::fs::read_to_string(&env_file).unwrap());
    let pub_pem = dir.path().join("pub.pem");
    let v = python(&py, VERIFY, &[&env_file, &pub_pem]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    let got: Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(got["payloadType"], "application/vnd.in-toto+json");
    let envelope: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(envelope["signatures"][0]["keyid"], got["keyid"]);
    let statement = &got["statement"];
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(statement["predicate"]["result"], "WARNED");
    // The statement changed after signing: in-toto refuses it.
    let mut forged = envelope.clone();
    let text = r#"{"_type":"https://in-toto.io/Statement/v1","predicate":{"result":"PASSED"}}"#;
    use base64::Engine as _;
    forged["payload"] = base64::engine::general_purpose::STANDARD
        .encode(text)
        .into();
    std::fs::write(&env_file, forged.to_string()).unwrap();
    let v = python(&py, VERIFY, &[&env_file, &pub_pem]);
    assert!(
        !v.status.success(),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    assert!(String::from_utf8_lossy(&v.stderr).contains("SignatureVerificationError"));
}

#[test]
fn a_sign_key_without_an_attestation_or_that_is_no_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("seed");
    std::fs::write(&key, [1u8; 32]).unwrap();
    let page = fixture("mia-recipe-1104-2x");
    let (page, key_s) = (page.to_str().unwrap(), key.to_str().unwrap());
    let r = rigaudit(&["verify", page, "--sign-key", key_s]);
    r.assert_exit_saying(2, "--sign-key signs the in-toto attestation");
    std::fs::write(&key, "hello").unwrap();
    let r = rigaudit(&["verify", page, "--sign-key", key_s, "--format", "intoto"]);
    r.assert_exit_saying(2, "expected an ed25519 key");
    // A raw seed signs: the envelope's one signature.
    std::fs::write(&key, [1u8; 32]).unwrap();
    let r = rigaudit(&["verify", page, "--sign-key", key_s, "--format", "intoto"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let env: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(env["signatures"].as_array().map(Vec::len), Some(1));
}
