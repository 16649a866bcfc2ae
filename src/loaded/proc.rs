//! Reading a process tree from `/proc`: its processes (a root and every descendant), each one's
//! executable, file-backed mappings and loader variables. Nothing here hashes or loads anything.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

/// The most processes one tree is read for (a server forks workers, not thousands).
const MAX_PROCESSES: usize = 1024;
/// The most bytes of one `/proc/PID/maps` or `environ` read (a maps file of a process with a
/// million mappings is cut there, and said).
const MAX_PROC_FILE: u64 = 64 << 20;

/// One file-backed mapping: the path the kernel gives and the inode it mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The path, without the kernel's ` (deleted)` mark.
    pub path: String,
    /// The device, as the maps line gives it (`fe:00`).
    pub dev: String,
    /// The inode mapped.
    pub inode: u64,
    /// Whether the kernel marks the file deleted since it was mapped.
    pub deleted: bool,
}

/// The file-backed mappings of a `/proc/PID/maps` text, one per path, in first-seen order:
/// lines whose path is absolute and names a file (not `/dev/...`, a `memfd:` or SysV segment,
/// inode 0).
pub fn file_backed(maps: &str) -> Vec<Mapping> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in maps.lines() {
        let Some(m) = mapping(line) else { continue };
        if seen.insert(m.path.clone()) {
            out.push(m);
        }
    }
    out
}

/// One maps line (`addr perms offset dev inode   path`) as a file mapping, if it is one.
fn mapping(line: &str) -> Option<Mapping> {
    let mut rest = line;
    let mut fields = [""; 5];
    for f in &mut fields {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace)?;
        *f = &rest[..end];
        rest = &rest[end..];
    }
    let path = rest.trim_start();
    let inode: u64 = fields[4].parse().ok()?;
    if inode == 0 || !path.starts_with('/') {
        return None;
    }
    let (path, deleted) = match path.strip_suffix(" (deleted)") {
        Some(p) => (p, true),
        None => (path, false),
    };
    let special = ["/dev/", "/memfd:", "/SYSV", "/proc/", "/sys/"];
    if special.iter().any(|s| path.starts_with(s)) {
        return None;
    }
    Some(Mapping {
        path: path.to_string(),
        dev: fields[3].to_string(),
        inode,
        deleted,
    })
}

/// What one process of the tree showed.
#[derive(Debug, Default)]
pub struct Process {
    /// Its executable, as `/proc/PID/exe` names it (` (deleted)` kept when the kernel says so).
    pub exe: Option<String>,
    /// Its file-backed mappings.
    pub maps: Vec<Mapping>,
    /// Its loader variables (those `env_rules` calls places code is loaded from).
    pub loader_env: BTreeMap<String, String>,
    /// What could not be read of it, and why.
    pub refused: Vec<String>,
}

/// A bounded read of a `/proc` file (`None` and why when it cannot be read).
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_PROC_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes)
}

/// Reads one process: exe, maps, loader variables.
pub fn process(pid: u32) -> Process {
    let dir = Path::new("/proc").join(pid.to_string());
    let mut p = Process::default();
    match std::fs::read_link(dir.join("exe")) {
        Ok(exe) => p.exe = Some(exe.to_string_lossy().into_owned()),
        Err(e) => p
            .refused
            .push(format!("its executable (/proc/{pid}/exe): {e}")),
    }
    match read_bounded(&dir.join("maps")) {
        Ok(bytes) => {
            if bytes.len() as u64 >= MAX_PROC_FILE {
                p.refused.push(format!(
                    "/proc/{pid}/maps is over {} MiB: read that far",
                    MAX_PROC_FILE >> 20
                ));
            }
            p.maps = file_backed(&String::from_utf8_lossy(&bytes));
        }
        Err(e) => p.refused.push(format!("its mappings: {e}")),
    }
    if let Ok(bytes) = read_bounded(&dir.join("environ")) {
        p.loader_env = loader_vars(&bytes);
    }
    p
}

/// The variables that decide which files a process maps: the dynamic loader's (`LD_*`), the
/// bundled engine's and NCCL's library and plugin paths, CUDA's injection library, Python's
/// search path and environment.
const LOADER_VARS: &[&str] = &[
    "RIGAUDIT_NCCL",
    "RIGAUDIT_NVRTC",
    "CUDA_INJECTION64_PATH",
    "NCCL_NET_PLUGIN",
    "NCCL_TUNER_PLUGIN",
    "NCCL_PROFILER_PLUGIN",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
];

/// The loader variables ([`LOADER_VARS`] and every `LD_*`) of an `environ` block, set and not
/// empty.
pub fn loader_vars(environ: &[u8]) -> BTreeMap<String, String> {
    environ
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            let loader = k.starts_with("LD_") || LOADER_VARS.contains(&k);
            (loader && !v.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The parent of `pid` from its `/proc/PID/stat` (the field after the command's closing `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and every descendant alive now, root first (at most [`MAX_PROCESSES`]).
pub fn tree(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(ppid) = parent_of(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() && out.len() < MAX_PROCESSES {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids.iter().copied().take(MAX_PROCESSES - out.len()));
        }
        i += 1;
    }
    out
}

/// Whether `pid` is alive (its `/proc` entry is there and it is not a zombie).
pub fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_keep_files_once_and_drop_what_is_not_a_file() {
        let maps = "\
55d0c0a00000-55d0c0a28000 r--p 00000000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
55d0c0a28000-55d0c0b9d000 r-xp 00028000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000000000-7f0000001000 rw-p 00000000 00:00 0                          [heap]
7f0000001000-7f0000002000 rw-s 00000000 00:05 1234                       /dev/nvidia0
7f0000002000-7f0000003000 r-xp 00000000 00:01 77                         /memfd:cuda (deleted)
7f0000003000-7f0000004000 r--p 00000000 fe:00 900                        /opt/my lib/libnccl.so.2 (deleted)
7f0000004000-7f0000005000 r--p 00000000 00:00 0 
";
        let m = file_backed(maps);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m[0].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!((m[0].inode, m[0].deleted), (326279, false));
        assert_eq!(m[1].path, "/opt/my lib/libnccl.so.2");
        assert!(m[1].deleted);
        assert_eq!(m[1].dev, "fe:00");
    }

    #[test]
    fn only_loader_places_are_kept_from_the_environment() {
        let env = b"PATH=/usr/bin\0LD_LIBRARY_PATH=/opt/nccl/lib\0HOME=/root\0LD_PRELOAD=/x.so\0NCCL_DEBUG=INFO\0PYTHONPATH=\0";
        let v = loader_vars(env);
        assert_eq!(
            v.get("LD_LIBRARY_PATH").map(String::as_str),
            Some("/opt/nccl/lib")
        );
        assert_eq!(v.get("LD_PRELOAD").map(String::as_str), Some("/x.so"));
        assert!(!v.contains_key("NCCL_DEBUG") && !v.contains_key("PYTHONPATH"));
    }

    #[test]
    fn this_process_reads_as_a_tree_of_itself_with_its_executable_mapped() {
        let me = std::process::id();
        assert_eq!(tree(me)[0], me);
        let p = process(me);
        let exe = p.exe.expect("own exe");
        assert!(
            p.maps.iter().any(|m| m.path == exe),
            "{exe} not in {:?}",
            p.maps
        );
        assert!(
            p.maps.iter().any(|m| m.path.contains("libc")),
            "{:?}",
            p.maps
        );
        assert!(alive(me));
    }
}
