//! Attacks through ssh options and box mappings (see attack.rs for what each asserts): an option
//! is on `boxmap::ALLOWED_OPTIONS` *and* its value has the option's shape, from the command line
//! and from a policy file alike; nothing is connected to or run before the refusal, so the marker
//! a payload would write never appears and the message names the option.

use super::attack::{Attack, Scratch, Surface, WORKFLOW_COMMAND};
use super::common::{decode_contract, fake_engine, two_box_card, write_bundle};
use std::path::PathBuf;

/// A two-box bundle of the fake engine in `s/bundle` (no placeholder but the port).
fn two_boxes(s: &Scratch) -> PathBuf {
    let script = fake_engine(s.path(), "fake_engine.py");
    let mut card = two_box_card("two boxes", &script, &[], serde_json::json!({}), None);
    let argv = serde_json::json!(["python3", script, "--port", "<port>"]);
    for c in card["commands"].as_array_mut().unwrap() {
        c["argv"] = argv.clone();
        c["env"] = serde_json::json!({});
    }
    let b = s.path().join("bundle");
    write_bundle(&b, ("ssh", "ssh"), &card, &decode_contract(1, 4));
    b
}

/// The options that would run a command here or open something, each with its value as the
/// attacker writes it (`MARKER` is the file a command that ran would create).
const RUN_OR_OPEN: &[&str] = &[
    "ProxyJump=x;touch MARKER",
    "ProxyJump=-oProxyCommand=touch${IFS}MARKER",
    "ProxyJump=$(touch MARKER)",
    "ProxyJump=jump:22,`touch MARKER`",
    "ProxyJump=a b -oProxyCommand=touch MARKER",
    "HostName=-oProxyCommand=touch MARKER",
    "HostName=h;touch MARKER",
    "User=-oProxyCommand=x",
    "IdentityFile=$(touch MARKER)",
    "UserKnownHostsFile=/x|touch MARKER",
    "ControlPath=-oProxyCommand=x",
    "Port=22;touch MARKER",
    "ProxyCommand=touch MARKER",
    "LocalCommand=touch MARKER",
    "PermitLocalCommand=yes",
    "KnownHostsCommand=/bin/touch MARKER",
    "PKCS11Provider=/tmp/evil.so",
    "SecurityKeyProvider=/tmp/evil.so",
    "RemoteCommand=touch MARKER",
    "SetEnv=LD_PRELOAD=/tmp/evil.so",
    "LocalForward=8080 localhost:80",
    "Include=/tmp/evil.conf",
];

#[test]
fn an_ssh_option_that_runs_or_opens_anything_is_refused_on_the_command_line() {
    for option in RUN_OR_OPEN {
        let s = Scratch::new();
        let b = two_boxes(&s);
        let args = [
            "replay",
            b.to_str().unwrap(),
            "--box",
            "second=127.0.0.1:1",
            "--ssh-option",
            option,
            "--out",
            "out",
        ];
        let key = option.split('=').next().unwrap();
        Attack::new(&s, &args)
            .run()
            .exit(2)
            .saying(&format!("--ssh-option {key}="))
            .clean(Surface::Text);
    }
}

#[test]
fn an_ssh_option_that_runs_or_opens_anything_is_refused_in_a_policy_file() {
    for option in RUN_OR_OPEN.iter().take(8) {
        let s = Scratch::new();
        let b = two_boxes(&s);
        let policy = s.path().join("policy.toml");
        let toml = format!("[ssh]\noptions = [{}]\n", toml_string(option));
        std::fs::write(&policy, toml).unwrap();
        let args = [
            "replay",
            b.to_str().unwrap(),
            "--box",
            "second=127.0.0.1:1",
            "--policy",
            policy.to_str().unwrap(),
            "--out",
            "out",
        ];
        Attack::new(&s, &args)
            .run()
            .exit(2)
            .saying("at /ssh/options/0")
            .clean(Surface::Text);
    }
}

/// A TOML basic string of `s`.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[test]
fn a_box_that_is_not_user_at_host_is_refused() {
    for target in [
        "second=-oProxyCommand=touch MARKER",
        "second=h;touch MARKER",
        "second=$(touch MARKER)",
        "second=me@-x",
        &format!("second=h{WORKFLOW_COMMAND}"),
    ] {
        let s = Scratch::new();
        let b = two_boxes(&s);
        let args = [
            "replay",
            b.to_str().unwrap(),
            "--box",
            target,
            "--out",
            "out",
        ];
        Attack::new(&s, &args)
            .run()
            .exit(2)
            .saying("--box")
            .clean(Surface::Text);
    }
}
