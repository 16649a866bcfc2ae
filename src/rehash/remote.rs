//! `rehash --root BOX=DIR` for a box mapped with `--box`: the card's artifacts are looked for in
//! DIR on that box and hashed there, over the same ssh channel as a replay's remote ranks (see
//! [`crate::replay::remote`]: the same client options, a fixed script, every word quoted).
//!
//! What is read there: the engine package, the engine binary and the NCCL library, by the file
//! names the card records (compared exactly; `find -name` only narrows), each hashed with
//! `sha256sum` on the box, and the version an NCCL library's text names (never loaded). Not
//! read there: checkpoint folders and the binary inside a package (hash them with a local
//! `--root`, or copy them).

use crate::fatal::{fatal, Fatal};
use crate::replay::remote::{digest_of, quote, said, Ssh, SshArgs, Target, NCCL_CHECK};
use rigaudit_audit::records::Card;
use rigaudit_audit::rehash::{Hashed, Location, Measured, NcclSeen, NcclVersion};

/// The fixed look-up: `$1` is the folder, the rest are file names; prints a `sha256sum` line for
/// every regular file of one of those names at most 16 levels below.
const FIND: &str = r#"d=$1
shift
if [ ! -d "$d" ]; then echo "not a folder" >&2; exit 3; fi
for n in "$@"; do
    find "$d" -maxdepth 16 -type f -name "$n" -exec sha256sum -- {} + 2>/dev/null
done
exit 0"#;

/// A `--root BOX=DIR` on a mapped box.
#[derive(Debug, Clone)]
pub struct RemoteRoot {
    /// Where the box is.
    pub target: Target,
    /// The folder on the box.
    pub dir: String,
}

/// Splits the `--root` values into those read here and those on a box mapped with `--box`.
pub fn split_roots(roots: &[String], a: &SshArgs) -> Result<(Vec<String>, Vec<RemoteRoot>), Fatal> {
    let targets = a.targets()?;
    let mut local = Vec::new();
    let mut remote = Vec::new();
    for r in roots {
        match r.split_once('=') {
            Some((b, dir)) if targets.contains_key(b) => {
                if !dir.starts_with('/') {
                    return Err(fatal(format!(
                        "--root {}: the folder on box {b} must be an absolute path",
                        crate::input::shown(r)
                    )));
                }
                remote.push(RemoteRoot {
                    target: targets[b].clone(),
                    dir: dir.to_string(),
                });
            }
            _ => local.push(r.clone()),
        }
    }
    Ok((local, remote))
}

/// What the card names a file of, for `find`.
struct Names {
    package: Option<String>,
    binary: Option<String>,
    nccl: Option<String>,
}

fn base(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

/// Looks for the card's artifacts in each remote root and records what was found into `m`.
/// An unreachable box or a folder that is not there is an error naming the box.
pub fn measure(
    card: &Card,
    roots: &[RemoteRoot],
    a: &SshArgs,
    m: &mut Measured,
) -> Result<(), Fatal> {
    if roots.is_empty() {
        return Ok(());
    }
    let ssh = Ssh::new(a)?;
    let names = Names {
        package: card.engine.package.as_ref().map(|p| base(&p.file)),
        binary: card.engine.binary.as_ref().map(|b| base(&b.path)),
        nccl: card.nccl.as_ref().map(|n| base(&n.file)),
    };
    for r in roots {
        let t = &r.target;
        m.searched
            .push(format!("{} (box {}, on {t} over ssh)", r.dir, t.box_name));
        for (digest, path) in find(&ssh, r, &names)? {
            let name = base(&path);
            let at = Location {
                box_name: Some(t.box_name.clone()),
                path: format!("{t}:{path}"),
                member: None,
            };
            let file = Hashed {
                at,
                sha256: Ok(digest),
            };
            if names.package.as_deref() == Some(name.as_str()) {
                m.package.push(file.clone());
            }
            if names.binary.as_deref() == Some(name.as_str()) {
                m.binary.push(file.clone());
            }
            if names.nccl.as_deref() == Some(name.as_str()) {
                let version = nccl_version(&ssh, t, &path);
                m.nccl.push(NcclSeen { file, version });
            }
        }
    }
    Ok(())
}

/// Runs [`FIND`] on the box: `(sha256, path)` of every file found.
fn find(ssh: &Ssh, r: &RemoteRoot, names: &Names) -> Result<Vec<(String, String)>, Fatal> {
    let t = &r.target;
    let mut args = vec![r.dir.as_str()];
    args.extend(
        [&names.package, &names.binary, &names.nccl]
            .into_iter()
            .flatten()
            .map(String::as_str),
    );
    let what = format!("--root {}={}: box {} ({t})", t.box_name, r.dir, t.box_name);
    let o = ssh
        .run_script(t, FIND, &args)
        .map_err(|e| fatal(format!("{what}: {e}")))?;
    match o.code {
        Some(0) => {}
        Some(255) => {
            return Err(fatal(format!(
                "{what}: cannot reach it over ssh: {}",
                said(&o)
            )))
        }
        _ => {
            return Err(fatal(format!(
                "{what}: cannot search {}: {}",
                quote(&r.dir),
                said(&o)
            )))
        }
    }
    // `sha256sum` writes "DIGEST  PATH"; a path with a newline or backslash is escaped (the line
    // starts with `\`) and is left out rather than guessed.
    Ok(o.stdout
        .lines()
        .filter(|l| !l.starts_with('\\'))
        .filter_map(|l| {
            let d = digest_of(l)?;
            l.get(66..).map(|p| (d, p.to_string()))
        })
        .collect())
}

/// The version an NCCL library's text names, read on the box (the library is never loaded).
fn nccl_version(ssh: &Ssh, t: &Target, path: &str) -> NcclVersion {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let why = format!(
        "on box {} over ssh: read from its text, never loaded",
        t.box_name
    );
    match ssh.run_script(t, NCCL_CHECK, &[file, dir]) {
        Ok(o) if o.code == Some(0) => {
            match o
                .stdout
                .lines()
                .nth(2)
                .and_then(|v| v.strip_prefix("NCCL version "))
            {
                Some(v) => NcclVersion::FromText {
                    version: v.trim_end_matches(['+', ' ']).to_string(),
                    why,
                },
                None => NcclVersion::NotQueried {
                    why: format!("{why}; its text names no NCCL version"),
                },
            }
        }
        Ok(o) => NcclVersion::NotQueried {
            why: format!("{why}; reading it failed: {}", said(&o)),
        },
        Err(e) => NcclVersion::NotQueried {
            why: format!("{why}; {e}"),
        },
    }
}
