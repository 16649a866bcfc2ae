//! The `loaded.*` rows on hand-made inventories: the seed page's card (TensorFold 1.2.7, NCCL
//! 2.30.7 on two boxes, digests as the page prints them: 8 hex digits).

use super::*;
use crate::records::loaded::{LoadedObject, LoadedRank, Role};
use crate::report::Finding;
use serde_json::json;

const BIN: &str = "441a3847bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const NCCL: &str = "fc7ea663cccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
const WEIGHTS: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const LIBC: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn card() -> Card {
    serde_json::from_value(json!({
        "hardware": {"description": "2x GB10", "boxes": [{"name": "atom", "rank": 0}, {"name": "pgx", "rank": 1}]},
        "engine": {"name": "TensorFold", "version": "1.2.7",
                   "binary": {"path": "tensorfold-native", "sha256": "441a3847"}},
        "nccl": {"version": "2.30.7", "file": "libnccl.so.2.30.7",
                 "per_box": [{"box": "atom", "sha256": "fc7ea663"}, {"box": "pgx", "sha256": "fc7ea663"}]},
        "checkpoint": {"repo": "HuggingFaceTB/SmolLM2-135M-Instruct", "revision": "r",
                       "files": [{"path": "gguf/model.gguf", "sha256": WEIGHTS}]},
        "ranks": 2, "commands": [],
        "sampling": {"defaults": {}, "defaults_source": "x"},
        "measured": "2026-11-12T02:06:00Z"
    }))
    .expect("test card")
}

fn object(path: &str, role: Role, sha256: &str) -> LoadedObject {
    LoadedObject {
        path: path.into(),
        role,
        sha256: Some(sha256.into()),
        size: 1,
        soname: None,
        version: None,
        package: None,
        seen: vec!["ready".into(), "end".into()],
        problem: None,
    }
}

/// A rank that ran the recorded binary with the recorded NCCL, weights and libc.
fn faithful(rank: u32, box_name: &str) -> LoadedRank {
    LoadedRank {
        side: None,
        rank,
        box_name: box_name.into(),
        host: "this machine".into(),
        pid: Some(100 + rank),
        read_at: vec!["ready".into(), "end".into()],
        processes: 1,
        loader_env: [(
            "LD_LIBRARY_PATH".to_string(),
            "/opt/nccl-2.30.7/lib".to_string(),
        )]
        .into(),
        objects: vec![
            object("/opt/tf/tensorfold-native", Role::Executable, BIN),
            object("/opt/nccl-2.30.7/lib/libnccl.so.2", Role::Library, NCCL),
            object("/data/gguf/model.gguf", Role::Data, WEIGHTS),
            object("/usr/lib/x86_64-linux-gnu/libc.so.6", Role::Library, LIBC),
        ],
        not_read: vec![],
        gone: vec![],
    }
}

fn run(ranks: &[LoadedRank]) -> Findings {
    check(&Input {
        card: &card(),
        ranks,
        card_file: "card.json",
        executable_trusted: false,
    })
}

fn of<'a>(f: &'a Findings, id: &str) -> Vec<&'a Finding> {
    f.findings.iter().filter(|x| x.check == id).collect()
}

#[test]
fn faithful_ranks_pass_every_row_and_list_only_what_the_card_does_not_record() {
    let f = run(&[faithful(0, "atom"), faithful(1, "pgx")]);
    for id in [
        "loaded.engine-binary",
        "loaded.nccl",
        "loaded.checkpoint",
        "loaded.ranks-differ",
        "loaded.not-read",
    ] {
        assert!(of(&f, id).is_empty(), "{id}: {:?}", of(&f, id));
        assert!(f.ran.iter().any(|r| r == id), "{id} did not run");
    }
    let unrecorded = of(&f, "loaded.unrecorded");
    assert_eq!(unrecorded.len(), 2, "{unrecorded:?}");
    assert_eq!(unrecorded[0].severity, Severity::Info);
    assert!(
        unrecorded[0].message.contains("1 of 3"),
        "{}",
        unrecorded[0].message
    );
    assert!(unrecorded[0].message.contains("libc.so.6"));
}

#[test]
fn nothing_runs_when_nothing_was_read() {
    let f = run(&[]);
    assert!(f.ran.is_empty() && f.findings.is_empty());
}

#[test]
fn an_nccl_from_elsewhere_names_both_files_and_the_variable() {
    let mut r = faithful(0, "atom");
    r.loader_env.insert(
        "LD_LIBRARY_PATH".into(),
        "/home/u/other/lib:/opt/nccl-2.30.7/lib".into(),
    );
    r.objects[1] = object("/home/u/other/lib/libnccl.so.2", Role::Library, OTHER);
    r.objects[1].version = Some("NCCL 2.32.3".into());
    let f = run(&[r]);
    let nccl = of(&f, "loaded.nccl");
    assert_eq!(nccl.len(), 1, "{nccl:?}");
    let m = &nccl[0].message;
    assert_eq!(nccl[0].severity, Severity::Error);
    for part in [
        "/home/u/other/lib/libnccl.so.2",
        "NCCL 2.32.3",
        "libnccl.so.2.30.7",
        "fc7ea663",
        "LD_LIBRARY_PATH=/home/u/other/lib:/opt/nccl-2.30.7/lib",
    ] {
        assert!(m.contains(part), "{part} not in {m}");
    }
}

#[test]
fn an_nccl_no_variable_names_says_so_and_none_mapped_is_a_warning() {
    let mut r = faithful(0, "atom");
    r.loader_env.clear();
    r.objects[1] = object("/usr/lib/libnccl.so.2", Role::Library, OTHER);
    let f = run(&[r]);
    assert!(of(&f, "loaded.nccl")[0]
        .message
        .contains("no loader variable names it"));
    let mut r = faithful(0, "atom");
    r.objects.remove(1);
    let f = run(&[r]);
    let nccl = of(&f, "loaded.nccl");
    assert_eq!(nccl.len(), 1);
    assert_eq!(nccl[0].severity, Severity::Warning);
    assert!(nccl[0].message.contains("mapped no NCCL library"));
}

#[test]
fn a_plugin_is_not_taken_for_the_runtime() {
    let mut r = faithful(0, "atom");
    r.objects.push(object(
        "/opt/nccl-2.30.7/lib/libnccl-net.so",
        Role::Library,
        OTHER,
    ));
    assert!(of(&run(&[r]), "loaded.nccl").is_empty());
}

#[test]
fn another_executable_is_an_engine_binary_error() {
    let mut r = faithful(0, "atom");
    r.objects[0] = object("/usr/local/bin/tensorfold-native", Role::Executable, OTHER);
    let f = run(&[r]);
    let e = of(&f, "loaded.engine-binary");
    assert_eq!(e.len(), 1);
    assert!(e[0].message.contains("/usr/local/bin/tensorfold-native"));
    assert!(e[0].message.contains("441a3847"));
    assert_eq!(e[0].pointer.as_deref(), Some("/engine/binary/sha256"));
    assert_eq!(e[0].severity, Severity::Error);
    // Run knowingly (--trust-executable): said, as a warning.
    let trusted = check(&Input {
        card: &card(),
        ranks: &[r_again()],
        card_file: "card.json",
        executable_trusted: true,
    });
    let w = of(&trusted, "loaded.engine-binary");
    assert_eq!(w[0].severity, Severity::Warning);
    assert!(w[0].message.contains("--trust-executable"));
}

fn r_again() -> LoadedRank {
    let mut r = faithful(0, "atom");
    r.objects[0] = object("/usr/local/bin/tensorfold-native", Role::Executable, OTHER);
    r
}

#[test]
fn other_weights_under_the_recorded_name_are_a_checkpoint_error() {
    let mut r = faithful(0, "atom");
    r.objects[2] = object("/data/elsewhere/model.gguf", Role::Data, OTHER);
    let f = run(&[r]);
    let e = of(&f, "loaded.checkpoint");
    assert_eq!(e.len(), 1);
    assert!(e[0].message.contains("gguf/model.gguf"));
    assert_eq!(e[0].pointer.as_deref(), Some("/checkpoint/files/0/sha256"));
}

#[test]
fn ranks_with_different_libraries_of_one_name_differ() {
    let mut one = faithful(1, "pgx");
    one.objects[3] = object("/usr/lib/x86_64-linux-gnu/libc.so.6", Role::Library, OTHER);
    let f = run(&[faithful(0, "atom"), one]);
    let e = of(&f, "loaded.ranks-differ");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].message.contains("libc.so.6") && e[0].message.contains("rank 1"));
    // One rank read: nothing to compare, the row does not run.
    let f = run(&[faithful(0, "atom")]);
    assert!(!f.ran.iter().any(|r| r == "loaded.ranks-differ"));
}

#[test]
fn a_rank_not_read_and_a_replaced_file_are_said() {
    let mut gone = faithful(1, "pgx");
    gone.gone
        .push("the server (pid 101) had exited when it was to be read at end".into());
    gone.not_read
        .push("at end: the listing on n2 failed (exit 255)".into());
    let mut replaced = faithful(0, "atom");
    replaced.objects[3].problem = Some("replaced since it was mapped".into());
    let f = run(&[replaced, gone]);
    let e = of(&f, "loaded.not-read");
    assert_eq!(e.len(), 3, "{e:?}");
    let at = |needle: &str| {
        e.iter()
            .find(|x| x.message.contains(needle))
            .unwrap()
            .severity
    };
    // A rank that exited is the replay's to report (a failed step): here a note.
    assert_eq!(at("had exited"), Severity::Info);
    assert_eq!(at("listing on n2 failed"), Severity::Warning);
    assert_eq!(at("libc.so.6: replaced"), Severity::Warning);
}
