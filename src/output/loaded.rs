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
/// 2.36-9; NCCL 2.30.7; deleted since it was mapped`.
pub fn object_note(o: &LoadedObject) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = o.soname.as_ref().filter(|s| *s != o.name()) {
        parts.push(format!("soname {s}"));
    }
    parts.extend(o.package.clone());
    parts.extend(o.version.clone());
    if o.seen.len() == 1 {
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
