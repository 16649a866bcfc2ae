//! `verify|audit|diff URL`: a packed bundle or another tool's result file fetched over HTTP(S)
//! into the cache, then opened by the front door (`subject.rs`) as the local file it now is.
//!
//! A server is input like any other, so every way it could abuse the reader is bounded: a size cap
//! (the announced `Content-Length` is refused up front when it is over, and the body is cut off at
//! the cap whatever was announced), a connect timeout and a deadline for the whole download (a
//! server that trickles bytes is stopped), at most [`MAX_REDIRECTS`] redirects (a loop is refused
//! when it comes back to an address it saw), no redirect from https to http, and credentials given
//! in the URL (`https://user:token@host/...`) never sent to another host (reqwest drops
//! `Authorization` on a cross-host redirect; the URL is shown without them). A body shorter than
//! its announced length is refused. No `Accept-Encoding` is sent and nothing is decompressed here:
//! a packed bundle is unpacked by `bundle.rs` under its own bounds.
//!
//! The file is kept under `$RIGAUDIT_CACHE/downloads/SHA256/NAME` (the name from the URL's last
//! segment, `.tar.gz` or `.tar` added when the content is one and the name does not say so), written
//! atomically. `--sha256 HEX` pins it: a download with another digest is refused and not kept, and
//! a pinned file already in the cache is used without asking the network.

use crate::digest::hex;
use crate::fatal::{fatal, Fatal};
use crate::fetch::cache_root;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// The connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Options of the commands that take a URL.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FetchArgs {
    /// The sha256 (hex) a URL's download must have; refused when it differs. Repeatable: the
    /// first pins the first URL given, the second the second.
    #[arg(long = "sha256", value_name = "HEX")]
    pub sha256: Vec<String>,
    /// The most a URL's download may take, in seconds, from connecting to the last byte.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub fetch_timeout: u64,
    /// The most bytes a URL's download may have, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub max_download: u64,
}

/// Whether an argument is a URL rather than a path.
pub fn is_url(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.starts_with("http://") || s.starts_with("https://")
}

/// The user's paths with every URL among them replaced by its downloaded file; `--sha256` pins
/// go to the URLs in order.
pub fn local_paths(paths: &[PathBuf], args: &FetchArgs) -> Result<Vec<PathBuf>, Fatal> {
    let urls = paths.iter().filter(|p| is_url(p)).count();
    if !args.sha256.is_empty() && args.sha256.len() != urls {
        return Err(fatal(format!(
            "--sha256: {} given for {urls} URL(s); give one per URL, in the order of the URLs",
            args.sha256.len()
        )));
    }
    let mut pins = args.sha256.iter();
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        if is_url(p) {
            let pin = pins.next().map(|h| pin_of(h)).transpose()?;
            out.push(fetch(&p.to_string_lossy(), pin.as_deref(), args)?);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// One path, downloaded when it is a URL (see [`local_paths`]).
pub fn local_path(path: &Path, args: &FetchArgs) -> Result<PathBuf, Fatal> {
    let mut one = local_paths(std::slice::from_ref(&path.to_path_buf()), args)?;
    Ok(one.pop().unwrap_or_else(|| path.to_path_buf()))
}

/// A `--sha256` value, checked: 64 hex digits, returned lower-case.
fn pin_of(hex_digits: &str) -> Result<String, Fatal> {
    let h = hex_digits.trim().to_ascii_lowercase();
    if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(h);
    }
    Err(fatal(format!(
        "--sha256: expected 64 hex digits, found '{}'",
        crate::input::shown(hex_digits)
    )))
}

/// The URL as it may be shown: without user name and password.
fn shown_url(url: &reqwest::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// Downloads `url` into the cache (or finds it there when pinned) and returns the file's path.
pub fn fetch(url: &str, pin: Option<&str>, args: &FetchArgs) -> Result<PathBuf, Fatal> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        fatal(format!(
            "{}: not a URL rigaudit can fetch: {e}",
            crate::input::shown(&crate::input::without_credentials(url))
        ))
    })?;
    let shown = shown_url(&parsed);
    let dir = cache_root().join("downloads");
    if let Some(found) = pin.and_then(|p| cached(&dir.join(p), p)) {
        crate::progress::say(format_args!(
            "rigaudit: {shown}: sha256 {} cached in {}",
            pin.unwrap_or_default(),
            found.display()
        ));
        return Ok(found);
    }
    std::fs::create_dir_all(&dir).map_err(|e| fatal(format!("{}: {e}", dir.display())))?;
    let got = download(&parsed, &shown, &dir, args)?;
    if let Some(want) = pin.filter(|want| *want != got.sha256) {
        return Err(fatal(format!(
            "{shown}: sha256 {} is not the pinned {want} (--sha256); refused, not kept",
            got.sha256
        )));
    }
    let kept = keep(got, &parsed, &dir)?;
    crate::progress::say(format_args!(
        "rigaudit: {shown}: fetched into {}",
        kept.display()
    ));
    Ok(kept)
}

/// The one file in a digest's cache folder, when its content still has that digest.
fn cached(dir: &Path, want: &str) -> Option<PathBuf> {
    let mut files = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path());
    let file = files.next().filter(|p| p.is_file())?;
    (crate::digest::sha256_file(&file).ok()? == want).then_some(file)
}

/// A finished download, in a temporary file of the cache folder.
struct Downloaded {
    file: tempfile::NamedTempFile,
    sha256: String,
    head: Vec<u8>,
}

/// The client: the redirect rule, the timeouts.
fn client(timeout: Duration) -> Result<reqwest::blocking::Client, Fatal> {
    crate::http::builder()
        .user_agent(concat!("rigaudit/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT.min(timeout))
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::custom(redirect_rule))
        .build()
        .map_err(|e| fatal(format!("cannot set up the HTTP client: {e}")))
}

/// Follows a redirect unless it is one too many, back to an address already seen, or from https
/// to http.
fn redirect_rule(attempt: reqwest::redirect::Attempt) -> reqwest::redirect::Action {
    let to = shown_url(attempt.url());
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(format!(
            "more than {MAX_REDIRECTS} redirects (the last to {to})"
        ));
    }
    if attempt.previous().iter().any(|u| u == attempt.url()) {
        return attempt.error(format!("a redirect loop (back to {to})"));
    }
    let from_https = attempt
        .previous()
        .last()
        .is_some_and(|u| u.scheme() == "https");
    if from_https && attempt.url().scheme() != "https" {
        return attempt.error(format!("a redirect from https to {to}, refused"));
    }
    attempt.follow()
}

/// The whole error chain of a reqwest error, for the user (reqwest's own `Display` says only
/// "error sending request").
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Streams the body into a temporary file of `dir`, hashing it, within the size cap and deadline.
fn download(
    url: &reqwest::Url,
    shown: &str,
    dir: &Path,
    args: &FetchArgs,
) -> Result<Downloaded, Fatal> {
    let timeout = Duration::from_secs(args.fetch_timeout.max(1));
    let cap = args.max_download.saturating_mul(1 << 20);
    let started = Instant::now();
    let failed = |what: String| fatal(format!("{shown}: {what}"));
    let mut resp = client(timeout)?
        .get(url.clone())
        .send()
        .map_err(|e| {
            failed(format!(
                "cannot fetch: {}; check the address and the network, or download the file and give its path",
                chain(&e)
            ))
        })?;
    if !resp.status().is_success() {
        return Err(failed(format!(
            "the server answered HTTP {}",
            resp.status()
        )));
    }
    let announced = resp.content_length();
    if let Some(n) = announced.filter(|n| *n > cap) {
        return Err(failed(format!(
            "announces {n} bytes, over the cap of {} (--max-download); refused",
            crate::input::size(cap)
        )));
    }
    let file = tempfile::Builder::new()
        .prefix(".download-")
        .tempfile_in(dir)
        .map_err(|e| fatal(format!("{}: cannot write: {e}", dir.display())))?;
    let body = Body {
        cap,
        announced,
        deadline: (started, timeout),
    };
    body.copy(&mut resp, file).map_err(failed)
}

/// What bounds a body being read.
struct Body {
    cap: u64,
    announced: Option<u64>,
    deadline: (Instant, Duration),
}

impl Body {
    /// Copies the body into `file`, hashing it; `Err` (the message) when it breaks off, runs past
    /// the deadline or the cap, or ends before its announced length.
    fn copy(
        &self,
        from: &mut impl Read,
        mut file: tempfile::NamedTempFile,
    ) -> Result<Downloaded, String> {
        let mut hasher = Sha256::new();
        let mut head = Vec::new();
        let mut total: u64 = 0;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = from
                .read(&mut buf)
                .map_err(|e| self.broke(total, &chain(&e)))?;
            if n == 0 {
                break;
            }
            total += n as u64;
            // reqwest's blocking timeout bounds each read, not the whole body: a trickle of a
            // byte a second would never end.
            if self.deadline.0.elapsed() >= self.deadline.1 {
                return Err(self.broke(total, "still coming"));
            }
            if total > self.cap {
                return Err(format!(
                    "more than the cap of {} (--max-download); refused",
                    crate::input::size(self.cap)
                ));
            }
            if head.len() < 512 {
                head.extend_from_slice(&buf[..n.min(512 - head.len())]);
            }
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n])
                .map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
        }
        if self.announced.is_some_and(|n| n != total) {
            return Err(self.broke(total, "the connection closed"));
        }
        let sha256 = hex(&hasher.finalize());
        Ok(Downloaded { file, sha256, head })
    }

    /// The message for a body that broke off after `total` bytes.
    fn broke(&self, total: u64, why: &str) -> String {
        let (started, timeout) = self.deadline;
        if started.elapsed() >= timeout {
            return format!(
                "not finished within {} s (--fetch-timeout; {total} bytes came): {why}",
                timeout.as_secs()
            );
        }
        match self.announced {
            Some(n) => {
                format!("the body broke off after {total} of the {n} bytes announced: {why}")
            }
            None => format!("the body broke off after {total} bytes: {why}"),
        }
    }
}

/// Moves a finished download to `DIR/SHA256/NAME`, atomically (a rename in the cache folder).
fn keep(got: Downloaded, url: &reqwest::Url, dir: &Path) -> Result<PathBuf, Fatal> {
    let folder = dir.join(&got.sha256);
    std::fs::create_dir_all(&folder).map_err(|e| fatal(format!("{}: {e}", folder.display())))?;
    let dest = folder.join(file_name(url, &got.head));
    if let Some(found) = cached(&folder, &got.sha256) {
        return Ok(found);
    }
    got.file.persist(&dest).map_err(|e| {
        fatal(format!(
            "{}: cannot keep the download: {}",
            dest.display(),
            e.error
        ))
    })?;
    Ok(dest)
}

/// The file name to keep a download under: the URL's last segment with only safe characters,
/// `.tar.gz` / `.tar` added when the content is gzip / tar and the name does not say so.
fn file_name(url: &reqwest::Url, head: &[u8]) -> String {
    let last = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or_default();
    let mut name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    name = name.trim_start_matches('.').to_string();
    if name.is_empty() {
        name = "download".into();
    }
    let lower = name.to_ascii_lowercase();
    let gzip = head.starts_with(&[0x1f, 0x8b]);
    let tar = head.get(257..262) == Some(b"ustar");
    if gzip && !(lower.ends_with(".tar.gz") || lower.ends_with(".tgz")) {
        name.push_str(".tar.gz");
    } else if tar && !lower.ends_with(".tar") {
        name.push_str(".tar");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> reqwest::Url {
        reqwest::Url::parse(s).unwrap()
    }

    #[test]
    fn the_kept_name_is_safe_and_says_what_the_content_is() {
        let gz = [0x1f, 0x8b, 8, 0];
        assert_eq!(
            file_name(&url("https://h/p/page.tar.gz"), &gz),
            "page.tar.gz"
        );
        assert_eq!(file_name(&url("https://h/dl?id=3"), &gz), "dl.tar.gz");
        assert_eq!(file_name(&url("https://h/"), b"{}"), "download");
        assert_eq!(file_name(&url("https://h/..%2Fx.json"), b"{}"), "_2Fx.json");
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(file_name(&url("https://h/b"), &tar), "b.tar");
        assert_eq!(file_name(&url("https://h/r.json"), b"{\"a\":1}"), "r.json");
    }

    #[test]
    fn a_url_is_shown_without_its_credentials() {
        let shown = shown_url(&url("https://me:s3cret@example.org/a.tar.gz"));
        assert_eq!(shown, "https://example.org/a.tar.gz");
    }

    #[test]
    fn the_fetch_options_sit_with_every_commands_own() {
        // clap's own consistency checks of every command (names and groups unique), which a
        // run only makes of the command it parses.
        <crate::cli::Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn pins_are_64_hex_digits_one_per_url() {
        assert_eq!(pin_of(&"AB".repeat(32)).unwrap(), "ab".repeat(32));
        assert!(pin_of("abc").unwrap_err().0.contains("64 hex digits"));
        let args = FetchArgs {
            sha256: vec!["ab".repeat(32), "cd".repeat(32)],
            ..FetchArgs::default()
        };
        let e = local_paths(&[PathBuf::from("https://h/a.tar.gz")], &args).unwrap_err();
        assert!(e.0.contains("2 given for 1 URL(s)"), "{}", e.0);
    }
}
