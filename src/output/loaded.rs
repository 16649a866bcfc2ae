//! The words every format gives the inventory of what ran (`Report::loaded`): one line per rank
//! and, per mapped file, what it says of itself. Each renderer escapes them for its format.

use rigaudit_audit::records::loaded::{LoadedObject, LoadedRank, Role};

/// `rank 0 on box local: pid 17742 on this machine, 1 process read at ready and end, 5 files`.
pub fn rank_line(r: &LoadedRank) -> String {
    let pid = r.pid.map_or(String::new(), |p| format!("pid {p} "));
    let read = if r.read_at.is_empty() {
        "not read".to_string()
    } else {
        format!(
            "{} process{} read at {}",
            r.processes,
            if r.processes == 1 { "" } else { "es" },
            r.read_at.join(" and ")
        )
    };
    let side = r
        .side
        .as_ref()
        .map_or(String::new(), |s| format!("side {s}, "));
    format!(
        "{side}rank {} on box {}: {pid}on {}, {read}, {} file{} mapped",
        r.rank,
        r.box_name,
        r.host,
        r.objects.len(),
        if r.objects.len() == 1 { "" } else { "s" }
    )
}

/// The loader variables the rank's server had, `NAME=value` joined, when any.
pub fn loader_line(r: &LoadedRank) -> Option<String> {
    (!r.loader_env.is_empty()).then(|| {
        let vars: Vec<String> = r
            .loader_env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("loader variables: {}", vars.join(" "))
    })
}

/// What a file says of itself and what went wrong reading it: `soname libc.so.6; deb libc6
/// 2.36-9; NCCL 2.30.7; deleted since it was mapped`; with `reads` reads of its rank, that it
/// was mapped at one of them only.
pub fn object_note(o: &LoadedObject, reads: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = o.soname.as_ref().filter(|s| *s != o.name()) {
        parts.push(format!("soname {s}"));
    }
    parts.extend(o.package.clone());
    parts.extend(o.version.clone());
    if o.seen.len() == 1 && reads > 1 {
        parts.push(format!("mapped at {} only", o.seen[0]));
    }
    parts.extend(o.problem.clone());
    parts.join("; ")
}

/// Whether a short listing shows the file: an executable, an NCCL library, or one not surely
/// hashed. The rest are counted (every format but text lists all; text with `--verbose`).
pub fn shown_short(o: &LoadedObject) -> bool {
    o.role == Role::Executable || o.is_nccl() || o.problem.is_some()
}

/// The role's word.
pub fn role(o: &LoadedObject) -> &'static str {
    match o.role {
        Role::Executable => "executable",
        Role::Library => "library",
        Role::Data => "data",
    }
}

/// The digest's first 16 hex digits, or `–` when there is none.
pub fn short_digest(o: &LoadedObject) -> String {
    o.sha256
        .as_deref()
        .map_or("–".into(), |d| d.get(..16).unwrap_or(d).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rigaudit_audit::{Findings, Report, Severity};

    /// A report whose inventory holds a path and a variable written to break each format.
    fn hostile() -> Report {
        let object = LoadedObject {
            path: "/opt/<script>alert(1)</script>/\u{1b}[31mlibnccl.so.2|x`".into(),
            role: Role::Library,
            sha256: Some("ab".repeat(32)),
            size: 1,
            soname: None,
            version: Some("NCCL 2.30.7".into()),
            package: None,
            seen: vec!["ready".into(), "end".into()],
            problem: None,
        };
        let rank = LoadedRank {
            rank: 0,
            box_name: "b<i>".into(),
            host: "this machine".into(),
            processes: 1,
            read_at: vec!["ready".into()],
            loader_env: [(
                "LD_LIBRARY_PATH".to_string(),
                "/x\u{1b}]0;t\u{7}".to_string(),
            )]
            .into(),
            objects: vec![object],
            ..Default::default()
        };
        let found = Findings {
            loaded: vec![rank],
            ..Default::default()
        };
        Report::new("replay", "b", Some(Severity::Error), found)
    }

    #[test]
    fn mapped_at_one_read_only_is_said_when_there_were_two() {
        let mut o = hostile().loaded[0].objects[0].clone();
        o.seen = vec!["end".into()];
        assert!(object_note(&o, 2).contains("mapped at end only"));
        o.seen = vec!["now".into()];
        assert_eq!(object_note(&o, 1), "NCCL 2.30.7");
    }

    #[test]
    fn every_format_escapes_what_a_server_mapped() {
        let r = hostile();
        let style = crate::output::Style {
            color: false,
            verbose: true,
        };
        let text = crate::output::text::render(&r, style);
        assert!(text.contains("what ran"), "{text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        let html = crate::output::html::render(&r);
        assert!(html.contains("What ran"));
        assert!(
            !html.contains("<script>") && !html.contains("<i>"),
            "{html}"
        );
        let md = crate::output::markdown::render(&r);
        assert!(md.contains("### What ran"));
        assert!(!md.contains("<script>") && !md.contains('\u{1b}'), "{md}");
        let statement = crate::output::intoto::render_loaded(&r).unwrap();
        assert!(!statement.contains('\u{1b}'), "{statement}");
        let v: serde_json::Value = serde_json::from_str(&statement).unwrap();
        assert_eq!(v["subject"][0]["digest"]["sha256"], "ab".repeat(32));
        assert_eq!(
            v["predicate"]["ranks"][0]["objects"][0]["path"],
            "/opt/<script>alert(1)</script>/\u{1b}[31mlibnccl.so.2|x`"
        );
    }
}
