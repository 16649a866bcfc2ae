//! A test that the modules of `src/` import in layers: no circle between top-level modules
//! (`crate::X` in one, `crate::Y` in the other and back), nor between the modules of one folder
//! (`super::x`, `crate::folder::x`). Comments and unit tests are left out: a doc link or a test's
//! fixture is no dependency.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The `.rs` files below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.retain(|p| !is_test_file(p));
    out.sort();
    out
}

/// A file that only tests compile (a module's `tests.rs`, a file under a `tests/` folder, the
/// checks' `testkit.rs`): a test's imports are no dependency.
fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let in_src = path.components().skip_while(|c| c.as_os_str() != "src");
    let under_tests = in_src.into_iter().any(|c| c.as_os_str() == "tests");
    name == "tests.rs" || under_tests || name == "testkit.rs"
}

/// A file's code: without its unit tests and its comments.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `prefix` is followed by in `code`: `crate::a::...`, and each name of a group
/// `crate::{a, b::c}`.
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                out.extend(group.split(',').map(|n| ident(n.trim())));
            }
            None => {
                out.insert(ident(rest));
            }
        }
    }
    out.retain(|n| !n.is_empty() && n != "self");
    out
}

/// The module a file is in, one level below `base` (`a.rs` or `a/...` is `a`), and its name.
fn module_of(base: &Path, file: &Path) -> (String, bool) {
    let rel = file.strip_prefix(base).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (name, rel.components().count() == 1)
}

/// The top-level modules' imports of each other (`main.rs` or `lib.rs`, the root, left out).
fn top_level(src: &Path) -> Graph {
    let mut g = Graph::new();
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f).0).collect();
    for f in &files {
        let (me, _) = module_of(src, f);
        if me == "main" || me == "lib" {
            continue;
        }
        let used = named_after(&code_of(f), "crate::");
        let edges = g.entry(me.clone()).or_default();
        edges.extend(used.into_iter().filter(|u| *u != me && modules.contains(u)));
    }
    g
}

/// The imports between the modules of the folder `dir` (its `mod.rs`, the parent, left out).
fn in_folder(dir: &Path) -> Graph {
    let folder = dir.file_name().unwrap().to_string_lossy().to_string();
    let files = rust_files(dir);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(dir, f).0).collect();
    let mut g = Graph::new();
    for f in &files {
        let (me, direct) = module_of(dir, f);
        if me == "mod" {
            continue;
        }
        let code = code_of(f);
        let mut used = named_after(&code, &format!("crate::{folder}::"));
        if direct {
            used.extend(named_after(&code, "super::"));
        }
        let edges = g.entry(me.clone()).or_default();
        edges.extend(used.into_iter().filter(|u| *u != me && modules.contains(u)));
    }
    g
}

/// The modules each module reaches.
fn reach(g: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        for n in g.get(&m).into_iter().flatten() {
            if seen.insert(n.clone()) {
                todo.push(n.clone());
            }
        }
    }
    seen
}

/// The circles of a graph: each set of modules that reach each other, sorted.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    let reached: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|m| (m, reach(g, m))).collect();
    let mut out: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, r) in &reached {
        if !r.contains(*m) {
            continue;
        }
        let circle: Vec<String> = r
            .iter()
            .filter(|n| reached.get(n).is_some_and(|back| back.contains(*m)))
            .cloned()
            .collect();
        out.insert(circle);
    }
    out.into_iter().collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The source roots of the workspace's crates: the CLI, the checks and the engine.
fn roots() -> [PathBuf; 3] {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    [src(), base.join("audit/src"), base.join("engine/src")]
}

#[test]
fn no_circle_in_the_checks_or_the_engine() {
    for root in &roots()[1..] {
        let g = top_level(root);
        assert_eq!(
            circles(&g),
            Vec::<Vec<String>>::new(),
            "{}: {g:?}",
            root.display()
        );
    }
}

#[test]
fn no_circle_between_top_level_modules() {
    let g = top_level(&src());
    assert_eq!(circles(&g), Vec::<Vec<String>>::new(), "{g:?}");
    // rehash and audit reach boxes through the ssh room, not through replay.
    assert!(
        g["rehash"].contains("ssh") && !g["rehash"].contains("replay"),
        "{g:?}"
    );
    // A folder of many runs sits above the front door and verify: only the commands' ends call it.
    let tree_users: Vec<&String> = g
        .iter()
        .filter(|(_, used)| used.contains("tree"))
        .map(|(m, _)| m)
        .collect();
    assert_eq!(tree_users, ["commands"], "{g:?}");
    let audit = code_of(&src().join("audit.rs"));
    assert!(audit.contains("crate::ssh::") && !audit.contains("replay::remote"));
}

#[test]
fn no_circle_between_the_modules_of_a_folder() {
    let mut seen_a_folder = false;
    let folders = roots()
        .into_iter()
        .flat_map(|root| std::fs::read_dir(root).unwrap().flatten());
    for e in folders {
        let dir = e.path();
        if !dir.is_dir() {
            continue;
        }
        seen_a_folder = true;
        let folder = dir.file_name().unwrap().to_string_lossy().to_string();
        let found = circles(&in_folder(&dir));
        assert!(found.is_empty(), "src/{folder}: circles {found:?}");
    }
    assert!(seen_a_folder);
}

#[test]
fn a_circle_is_found() {
    let g: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .iter()
        .fold(Graph::new(), |mut g, (x, y)| {
            g.entry(x.to_string()).or_default().insert(y.to_string());
            g
        });
    assert_eq!(circles(&g), vec![vec!["a", "b", "c"]]);
    let code = "use crate::{a, b::c};\nlet x = crate::d::e();\n";
    assert_eq!(
        named_after(code, "crate::"),
        ["a", "b", "d"].map(String::from).into()
    );
}
