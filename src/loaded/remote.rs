//! A rank on a box (over ssh): what its server mapped, read on the box by two fixed scripts,
//! never copied back whole: [`LIST`] lists the server's process tree, each process's executable
//! (hashed through `/proc/PID/exe`) and file-backed mappings with their inodes, and the loader's
//! variables; [`HASH`] hashes on the box the mapped files it is given on its stdin (one path a
//! line, never on a command line), with each file's inode (checked against the mapped one here),
//! size, first bytes (ELF or not) and NCCL's version from its text. Both are fixed text run by
//! `/bin/sh` with coreutils, as every script on a box is ([`crate::ssh::script`]); nothing of a
//! page is pasted into them.

use crate::rehash::reach::Reach;
use crate::ssh::client::Bounds;
use crate::ssh::Target;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The listing: `$1` is the server's pid on the box. Prints `gone` (it has exited) or `refused
/// WHY`, else `V NAME=VALUE` per loader variable of the server, then per process `P PID`, `E
/// EXE`, `X SHA256 SIZE` of its executable and `M INODE PATH` per file mapping (once each).
pub const LIST: &str = r#"root=$1
if [ ! -d "/proc/$root" ]; then echo gone; exit 0; fi
if [ ! -r "/proc/$root/maps" ]; then echo "refused /proc/$root/maps cannot be read by $(id -un)"; exit 0; fi
all=$root
todo=$root
depth=0
while [ -n "$todo" ] && [ "$depth" -lt 32 ]; do
    next=
    for p in $todo; do
        for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do next="$next $c"; done
    done
    all="$all $next"
    todo=$next
    depth=$((depth + 1))
done
tr '\0' '\n' </proc/"$root"/environ 2>/dev/null |
    grep -E '^(LD_[A-Z0-9_]*|RIGAUDIT_NCCL|RIGAUDIT_NVRTC|CUDA_INJECTION64_PATH|NCCL_NET_PLUGIN|NCCL_TUNER_PLUGIN|NCCL_PROFILER_PLUGIN|PYTHONPATH|PYTHONHOME|PYTHONUSERBASE|VIRTUAL_ENV|CONDA_PREFIX)=.' |
    sed 's/^/V /'
for p in $all; do
    [ -r /proc/"$p"/maps ] || continue
    printf 'P %s\n' "$p"
    if e=$(readlink /proc/"$p"/exe 2>/dev/null); then
        printf 'E %s\n' "$e"
        d=$(sha256sum </proc/"$p"/exe 2>/dev/null) && printf 'X %s %s\n' "${d%% *}" "$(stat -L -c %s /proc/"$p"/exe 2>/dev/null || echo 0)"
    fi
    awk '$5 != 0 { i = index($0, "/"); if (i > 0) { k = $5 " " substr($0, i); if (!s[k]++) print "M " k } }' /proc/"$p"/maps 2>/dev/null
done
exit 0"#;

/// The hashing: the paths come on stdin, one a line. Prints per file `H INODE SIZE SHA256 MAGIC
/// PATH` (MAGIC: its first four bytes in hex, `-` when empty) and, for an NCCL library whose text
/// names its version, `V NCCL version X.Y.Z` after it; `F PATH` for one it cannot read.
pub const HASH: &str = r#"while IFS= read -r f; do
    s=$(stat -L -c '%i %s' -- "$f" 2>/dev/null) || { printf 'F %s\n' "$f"; continue; }
    d=$(sha256sum -- "$f" 2>/dev/null) || { printf 'F %s\n' "$f"; continue; }
    m=$(head -c 4 -- "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')
    [ -n "$m" ] || m=-
    printf 'H %s %s %s %s\n' "$s" "${d%% *}" "$m" "$f"
    case "${f##*/}" in
    libnccl*)
        v=$(LC_ALL=C grep -a -o -m 1 -E 'NCCL version [0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3}[+ ]' -- "$f" | head -n 1)
        [ -n "$v" ] && printf 'V %s\n' "$v"
        ;;
    esac
done
exit 0"#;

/// The most of a listing or a hashing read back (a server of a thousand libraries lists about
/// 100 KiB).
const OUT_MAX: u64 = 8 << 20;
/// How long a listing may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the hashing of one rank's files may take (a mapped checkpoint can be large).
const HASH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A rank's server on a box.
#[derive(Clone)]
pub struct OnBox {
    /// How the box is reached.
    pub reach: Arc<Reach>,
    /// The box.
    pub target: Target,
    /// The server's pid there.
    pub pid: u32,
}

/// What one listing showed.
#[derive(Debug, Default, PartialEq)]
pub struct Listing {
    /// The server had exited.
    pub gone: bool,
    /// Why it could not be read, when it could not.
    pub refused: Option<String>,
    /// Its processes.
    pub processes: Vec<u32>,
    /// Each executable with its digest and size.
    pub executables: Vec<(String, Option<(String, u64)>)>,
    /// Each mapped file with its inode.
    pub maps: Vec<(u64, String)>,
    /// The server's loader variables.
    pub loader_env: BTreeMap<String, String>,
}

/// Parses [`LIST`]'s output.
pub fn parse_listing(text: &str) -> Listing {
    let mut l = Listing::default();
    for line in text.lines() {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        match tag {
            "gone" => l.gone = true,
            "refused" => l.refused = Some(rest.to_string()),
            "P" => l.processes.extend(rest.parse::<u32>().ok()),
            "E" => l.executables.push((rest.to_string(), None)),
            "X" => {
                let (digest, size) = rest.split_once(' ').unwrap_or((rest, "0"));
                if let Some(last) = l.executables.last_mut() {
                    last.1 = Some((digest.to_string(), size.trim().parse().unwrap_or(0)));
                }
            }
            "M" => {
                if let Some((ino, path)) = rest.split_once(' ') {
                    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
                    l.maps
                        .extend(ino.parse().ok().map(|i| (i, path.to_string())));
                }
            }
            "V" => {
                if let Some((k, v)) = rest.split_once('=') {
                    l.loader_env.insert(k.to_string(), v.to_string());
                }
            }
            _ => {}
        }
    }
    l
}

/// Lists the server's tree on its box now.
pub fn list(b: &OnBox) -> Result<Listing, String> {
    let pid = b.pid.to_string();
    let bounds = Bounds {
        input: Vec::new(),
        out_max: OUT_MAX,
        timeout: LIST_TIMEOUT,
    };
    let out = b.reach.run_with(&b.target, LIST, &[&pid], bounds)?;
    if out.code != Some(0) {
        return Err(format!(
            "the listing on {} failed ({}): {}",
            b.reach.how(&b.target),
            out.code.map_or("killed".into(), |c| format!("exit {c}")),
            crate::input::shown(out.stderr.trim())
        ));
    }
    Ok(parse_listing(&out.stdout))
}

/// A file hashed on the box.
#[derive(Debug, Clone, PartialEq)]
pub struct Hashed {
    /// Its inode now.
    pub inode: u64,
    /// Its size.
    pub size: u64,
    /// Its sha256.
    pub sha256: String,
    /// Whether it is an ELF file.
    pub elf: bool,
    /// NCCL's version from its text.
    pub version: Option<String>,
}

/// Parses [`HASH`]'s output: each path hashed, or `None` for one that could not be read.
pub fn parse_hashed(text: &str) -> BTreeMap<String, Option<Hashed>> {
    let mut out: BTreeMap<String, Option<Hashed>> = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("F ") {
            out.insert(path.to_string(), None);
        } else if let Some(v) = line.strip_prefix("V NCCL version ") {
            let v = v.trim_end_matches(['+', ' ']);
            if let Some(Some(h)) = last.as_ref().and_then(|p| out.get_mut(p)) {
                h.version = Some(format!("NCCL {v}"));
            }
        } else if let Some(rest) = line.strip_prefix("H ") {
            let f: Vec<&str> = rest.splitn(5, ' ').collect();
            let [ino, size, sha, magic, path] = f[..] else {
                continue;
            };
            let (Ok(inode), Ok(size)) = (ino.parse(), size.parse()) else {
                continue;
            };
            let h = Hashed {
                inode,
                size,
                sha256: sha.to_string(),
                elf: magic == "7f454c46",
                version: None,
            };
            out.insert(path.to_string(), Some(h));
            last = Some(path.to_string());
        }
    }
    out
}

/// Hashes `paths` on the box.
pub fn hash(b: &OnBox, paths: &[String]) -> Result<BTreeMap<String, Option<Hashed>>, String> {
    if paths.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut input = paths.join("\n").into_bytes();
    input.push(b'\n');
    let bounds = Bounds {
        input,
        out_max: OUT_MAX,
        timeout: HASH_TIMEOUT,
    };
    let out = b.reach.run_with(&b.target, HASH, &[], bounds)?;
    if out.code != Some(0) {
        return Err(format!(
            "the hashing on {} failed: {}",
            b.reach.how(&b.target),
            crate::input::shown(out.stderr.trim())
        ));
    }
    Ok(parse_hashed(&out.stdout))
}

/// The server's pid on its box from the line its start printed among the rank's first lines:
/// the ssh wrapper's (`rigaudit-remote: rank started on HOST as process group PID`) or a Slurm
/// step's (`rigaudit-slurm: rank started on NODE as pid PID`).
pub fn pid_of(start_lines: &[String]) -> Option<u32> {
    start_lines.iter().find_map(|l| {
        let said = l.contains("rigaudit-remote: rank started on ")
            || l.contains("rigaudit-slurm: rank started on ");
        let pid = l.rsplit([' ']).next()?.trim();
        said.then(|| pid.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_reads_processes_executables_maps_and_variables() {
        let text = "V LD_LIBRARY_PATH=/opt/n lib\nP 10\nE /usr/bin/python3.11\nX abc 6\nM 77 /usr/lib/libc.so.6\nM 78 /opt/n lib/libnccl.so.2 (deleted)\nP 11\nE /bin/x\n";
        let l = parse_listing(text);
        assert_eq!(l.processes, vec![10, 11]);
        assert_eq!(
            l.executables,
            vec![
                (
                    "/usr/bin/python3.11".to_string(),
                    Some(("abc".to_string(), 6))
                ),
                ("/bin/x".to_string(), None)
            ]
        );
        assert_eq!(l.maps[1], (78, "/opt/n lib/libnccl.so.2".to_string()));
        assert_eq!(l.loader_env["LD_LIBRARY_PATH"], "/opt/n lib");
        assert!(parse_listing("gone\n").gone);
    }

    #[test]
    fn hashed_lines_keep_paths_with_spaces_and_the_nccl_version() {
        let text = "H 5 10 aa 7f454c46 /opt/n lib/libnccl.so.2\nV NCCL version 2.32.3+\nF /gone\nH 6 0 bb - /empty\n";
        let h = parse_hashed(text);
        let n = h["/opt/n lib/libnccl.so.2"].clone().unwrap();
        assert_eq!((n.inode, n.size, n.elf), (5, 10, true));
        assert_eq!(n.version.as_deref(), Some("NCCL 2.32.3"));
        assert_eq!(h["/gone"], None);
        assert!(!h["/empty"].as_ref().unwrap().elf);
    }

    #[test]
    fn the_remote_pid_comes_from_the_wrappers_line() {
        let lines = vec![
            "fake-engine start".to_string(),
            "rigaudit-remote: rank started on box2 as process group 4242".to_string(),
        ];
        assert_eq!(pid_of(&lines), Some(4242));
        assert_eq!(pid_of(&lines[..1]), None);
        let slurm = vec!["rigaudit-slurm: rank started on n2 as pid 77".to_string()];
        assert_eq!(pid_of(&slurm), Some(77));
    }
}
