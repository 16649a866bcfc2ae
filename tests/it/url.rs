//! `verify|diff URL`: bundles fetched over HTTP from a server on loopback written here, which
//! serves a packed bundle well and also misbehaves: trickles bytes, lies about its length, sends
//! more than the cap, redirects in a loop and without end, serves an archive bomb, and redirects to
//! another host a request that carried credentials.

use crate::common;

use common::{fixture, rigaudit_with_env, venv, Run};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MIA: &str = "mia-recipe-1104-2x";

/// What the server sends for a request: status line and headers (without the blank line), the
/// body, and a pause between the body's bytes (a trickle) when not zero.
struct Reply {
    head: String,
    body: Vec<u8>,
    pause: Duration,
}

impl Reply {
    fn ok(body: Vec<u8>) -> Reply {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}", body.len());
        Reply {
            head,
            body,
            pause: Duration::ZERO,
        }
    }

    fn redirect(to: &str) -> Reply {
        let head = format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0");
        Reply {
            head,
            body: Vec::new(),
            pause: Duration::ZERO,
        }
    }
}

/// A server on loopback: each request's path and header lines are recorded, the answer is
/// `route`'s. One thread per connection; it stops with the test process.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    scheme: &'static str,
}

impl Server {
    fn start(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Server {
        Server::start_with(None, route)
    }

    /// A plain HTTP server that answers every path with `bytes`.
    fn serving(bytes: Vec<u8>) -> Server {
        Server::start(move |_| Reply::ok(bytes.clone()))
    }

    /// A server that speaks TLS with `tls` (https), or plain HTTP without.
    fn start_with(
        tls: Option<Arc<rustls::ServerConfig>>,
        route: impl Fn(&str) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (route, log) = (Arc::new(route), seen.clone());
        let scheme = if tls.is_some() { "https" } else { "http" };
        std::thread::spawn(move || {
            for conn in l.incoming().flatten() {
                let (route, log, tls) = (route.clone(), log.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    None => serve(conn, &*route, &log),
                    Some(cfg) => {
                        let Ok(session) = rustls::ServerConnection::new(cfg) else {
                            return;
                        };
                        let mut stream = rustls::StreamOwned::new(session, conn);
                        serve(&mut stream, &*route, &log);
                        stream.conn.send_close_notify();
                        let _ = stream.flush();
                    }
                });
            }
        });
        Server { port, seen, scheme }
    }

    fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{path}", self.scheme, self.port)
    }

    /// The requests seen: each its request line and headers, one string.
    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut conn: impl Read + Write, route: &dyn Fn(&str) -> Reply, log: &Mutex<Vec<String>>) {
    // The request line and headers, a byte at a time up to the blank line.
    let mut request = Vec::new();
    let mut byte = [0u8; 1];
    while !request.ends_with(b"\r\n\r\n") && request.len() < 64 * 1024 {
        match conn.read(&mut byte) {
            Ok(1) => request.push(byte[0]),
            _ => return,
        }
    }
    let request = String::from_utf8_lossy(&request).into_owned();
    let path = request.split(' ').nth(1).unwrap_or("/").to_string();
    log.lock().unwrap().push(request);
    let reply = route(&path);
    let _ = write!(conn, "{}\r\nConnection: close\r\n\r\n", reply.head);
    if reply.pause.is_zero() {
        let _ = conn.write_all(&reply.body).and_then(|_| conn.flush());
        return;
    }
    for b in &reply.body {
        std::thread::sleep(reply.pause);
        if conn.write_all(&[*b]).and_then(|_| conn.flush()).is_err() {
            return;
        }
    }
}

/// The seed page MIA packed as a .tar.gz, its bytes.
fn packed_mia() -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    tar.append_dir_all(MIA, fixture(MIA)).unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

/// `rigaudit ARGS --format json` with its own cache folder.
fn run(args: &[&str], cache: &Path) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "json"]);
    rigaudit_with_env(&all, &[("RIGAUDIT_CACHE", cache)])
}

#[test]
fn a_fetched_bundle_verifies_as_the_local_one_and_is_kept_by_its_digest() {
    let bytes = packed_mia();
    let digest = common::sha_hex(&bytes);
    let s = Server::start(move |p| match p {
        "/pages/mia.tar.gz" => Reply::ok(bytes.clone()),
        _ => Reply {
            head: "HTTP/1.1 404 Not Found\r\nContent-Length: 0".into(),
            body: vec![],
            pause: Duration::ZERO,
        },
    });
    let cache = tempfile::tempdir().unwrap();
    let url = s.url("/pages/mia.tar.gz");
    let fetched = run(&["verify", &url], cache.path());
    let local = run(&["verify", fixture(MIA).to_str().unwrap()], cache.path());
    assert_eq!(fetched.code, 0, "{}", fetched.stderr);
    assert_eq!(
        (fetched.code, fetched.json()["verdict"].clone()),
        (local.code, local.json()["verdict"].clone())
    );
    assert_eq!(fetched.json()["findings"], local.json()["findings"]);
    let kept = cache
        .path()
        .join("downloads")
        .join(&digest)
        .join("mia.tar.gz");
    assert_eq!(common::sha_file(&kept), digest);
    // Pinned to its digest, the cached copy is used: the server is not asked again.
    let asked = s.requests().len();
    let again = run(&["verify", &url, "--sha256", &digest], cache.path());
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(s.requests().len(), asked);
    // A missing page is the server's 404, named.
    let gone = run(&["verify", &s.url("/pages/gone.tar.gz")], cache.path());
    gone.assert_exit_saying(2, "HTTP 404");
}

#[test]
fn a_download_with_another_digest_than_pinned_is_refused_and_not_kept() {
    let s = Server::serving(packed_mia());
    let cache = tempfile::tempdir().unwrap();
    let wrong = "0".repeat(64);
    let r = run(
        &["verify", &s.url("/mia.tar.gz"), "--sha256", &wrong],
        cache.path(),
    );
    r.assert_exit_saying(2, &format!("is not the pinned {wrong}"));
    let kept: Vec<_> = std::fs::read_dir(cache.path().join("downloads"))
        .unwrap()
        .flatten()
        .collect();
    assert!(kept.is_empty(), "{kept:?}");
}

#[test]
fn a_trickling_server_is_stopped_at_the_deadline() {
    let s = Server::start(|_| Reply {
        pause: Duration::from_millis(100),
        ..Reply::ok(vec![b'x'; 1000])
    });
    let cache = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let r = run(
        &["verify", &s.url("/slow.tar.gz"), "--fetch-timeout", "2"],
        cache.path(),
    );
    r.assert_exit_saying(2, "not finished within 2 s");
    // 1000 bytes at 100 ms each would take 100 s.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_server_that_lies_about_the_length_or_sends_too_much_is_refused() {
    let s = Server::start(|p| match p {
        // Announces 100000 bytes, sends 1000 and closes.
        "/short.tar.gz" => Reply {
            head: "HTTP/1.1 200 OK\r\nContent-Length: 100000".into(),
            body: vec![0x1f; 1000],
            pause: Duration::ZERO,
        },
        // Announces 3 MiB: over a 1 MiB cap before a byte is read.
        "/announced.tar.gz" => Reply::ok(vec![0; 3 << 20]),
        // Announces nothing (the body ends with the connection) and sends 3 MiB.
        _ => Reply {
            head: "HTTP/1.1 200 OK".into(),
            body: vec![0; 3 << 20],
            pause: Duration::ZERO,
        },
    });
    let cache = tempfile::tempdir().unwrap();
    let r = run(&["verify", &s.url("/short.tar.gz")], cache.path());
    r.assert_exit_saying(2, "of the 100000 bytes announced");
    let cap = ["--max-download", "1"];
    let r = run(
        &["verify", &s.url("/announced.tar.gz"), cap[0], cap[1]],
        cache.path(),
    );
    r.assert_exit_saying(2, "announces 3145728 bytes, over the cap of 1 MiB");
    let r = run(
        &["verify", &s.url("/unannounced.tar.gz"), cap[0], cap[1]],
        cache.path(),
    );
    r.assert_exit_saying(2, "more than the cap of 1 MiB");
}

#[test]
fn redirect_loops_and_endless_redirects_are_refused() {
    let s = Server::start(|p| {
        if p == "/loop" {
            return Reply::redirect("/loop");
        }
        let n: u64 = p.trim_start_matches("/hop/").parse().unwrap_or(0);
        Reply::redirect(&format!("/hop/{}", n + 1))
    });
    let cache = tempfile::tempdir().unwrap();
    let r = run(&["verify", &s.url("/loop")], cache.path());
    r.assert_exit_saying(2, "a redirect loop");
    let r = run(&["verify", &s.url("/hop/0")], cache.path());
    r.assert_exit_saying(2, "more than 5 redirects");
    // The first request and five redirects followed; the sixth refused.
    let hops = s.requests().iter().filter(|q| q.contains("/hop/")).count();
    assert_eq!(hops, 6, "{:?}", s.requests());
}

#[test]
fn a_fetched_archive_bomb_is_refused_by_the_unpack_bounds() {
    let bomb = tempfile::tempdir().unwrap();
    let path = bomb.path().join("b.tar.gz");
    let zeros = vec![0u8; 100 << 20];
    common::write_tar_gz(&path, &[("b/big.log", &zeros)], flate2::Compression::best());
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() < 1 << 20, "{}", bytes.len());
    let s = Server::serving(bytes);
    let cache = tempfile::tempdir().unwrap();
    let r = run(&["verify", &s.url("/bomb")], cache.path());
    r.assert_exit_saying(2, "archive bomb");
}

#[test]
fn credentials_are_not_sent_to_the_host_a_redirect_leads_to() {
    let other = Server::serving(packed_mia());
    let to = other.url("/mia.tar.gz");
    let first = Server::start(move |_| Reply::redirect(&to));
    let url = first
        .url("/mia.tar.gz")
        .replace("http://", "http://me:s3cret@");
    let cache = tempfile::tempdir().unwrap();
    let r = run(&["verify", &url], cache.path());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let auth = |s: &Server| {
        s.requests()
            .iter()
            .any(|q| q.to_ascii_lowercase().contains("authorization:"))
    };
    // The first host got the credentials it was given (the test could fail), the second did not.
    assert!(auth(&first), "{:?}", first.requests());
    assert!(!auth(&other), "{:?}", other.requests());
    assert!(!r.stderr.contains("s3cret"), "{}", r.stderr);
}

#[test]
fn diff_takes_a_url_on_each_side() {
    let s = Server::serving(packed_mia());
    let cache = tempfile::tempdir().unwrap();
    let (a, b) = (s.url("/a/mia.tar.gz"), s.url("/b/mia.tar.gz"));
    let fetched = run(&["diff", &a, &b], cache.path());
    let local = run(
        &[
            "diff",
            fixture(MIA).to_str().unwrap(),
            fixture(MIA).to_str().unwrap(),
        ],
        cache.path(),
    );
    assert_eq!(fetched.code, local.code, "{}", fetched.stderr);
    assert_eq!(fetched.json()["verdict"], local.json()["verdict"]);
    let one = run(&["diff", &a, &b, "--sha256", &"0".repeat(64)], cache.path());
    one.assert_exit_saying(2, "1 given for 2 URL(s)");
}

#[test]
fn audit_takes_a_url_as_verify_does() {
    let bytes = packed_mia();
    let digest = common::sha_hex(&bytes);
    let s = Server::start(move |_| Reply::ok(bytes.clone()));
    let cache = tempfile::tempdir().unwrap();
    let url = s.url("/mia.tar.gz");
    let fetched = run(
        &["audit", &url, "--no-replay", "--sha256", &digest],
        cache.path(),
    );
    let mia = fixture(MIA);
    let local = run(
        &["audit", mia.to_str().unwrap(), "--no-replay"],
        cache.path(),
    );
    assert_eq!(fetched.code, local.code, "{}", fetched.stderr);
    assert_eq!(fetched.json()["findings"], local.json()["findings"]);
}

/// Makes a self-signed certificate for 127.0.0.1 (cert.pem, key.pem in `dir`) with Python's
/// `cryptography`.
const CERTGEN: &str = r#"
import sys, datetime, ipaddress
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives import hashes, serialization as s
from cryptography.hazmat.primitives.asymmetric import ec
k = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
now = datetime.datetime.now(datetime.timezone.utc)
c = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(k.public_key())
     .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
     .not_valid_after(now + datetime.timedelta(days=2))
     .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
     .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
     .sign(k, hashes.SHA256()))
open(sys.argv[1] + "/cert.pem", "wb").write(c.public_bytes(s.Encoding.PEM))
open(sys.argv[1] + "/key.pem", "wb").write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
"#;

/// The TLS configuration of a server with the certificate and key in `dir`.
fn tls_config(dir: &Path) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let cert = CertificateDer::from_pem_file(dir.join("cert.pem")).unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    Arc::new(cfg)
}

#[test]
fn https_fetches_with_a_trusted_certificate_only_and_never_drops_to_http() {
    // The certificate is made with the in-toto venv's `cryptography` (tests/it/attest.rs).
    // in-toto brings cryptography, which makes the certificate.
    let py = or_skip!(venv::or_skip("intoto-venv", &["in-toto==3.1.0"]));
    let dir = tempfile::tempdir().unwrap();
    common::output_ok(
        std::process::Command::new(&py)
            .args(["-c", CERTGEN])
            .arg(dir.path()),
    );
    let plain = Server::serving(packed_mia());
    let down = plain.url("/mia.tar.gz");
    let bytes = packed_mia();
    let s = Server::start_with(Some(tls_config(dir.path())), move |p| match p {
        "/down" => Reply::redirect(&down),
        _ => Reply::ok(bytes.clone()),
    });
    let cache = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let trusted = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--format", "json"]);
        rigaudit_with_env(
            &all,
            &[("RIGAUDIT_CACHE", cache.path()), ("SSL_CERT_FILE", &cert)],
        )
    };
    let url = s.url("/mia.tar.gz");
    assert!(url.starts_with("https://"), "{url}");
    let r = trusted(&["verify", &url]);
    assert_eq!(
        (r.code, r.json()["verdict"].as_str()),
        (0, Some("pass")),
        "{}",
        r.stderr
    );
    // Without the certificate among the trusted ones, nothing is fetched.
    let other_cache = tempfile::tempdir().unwrap();
    let r = run(&["verify", &url], other_cache.path());
    r.assert_exit_saying(2, "cannot fetch");
    assert!(
        r.stderr.to_lowercase().contains("certificate"),
        "{}",
        r.stderr
    );
    // A redirect from https to http is refused, and the http server never asked.
    let r = trusted(&["verify", &s.url("/down")]);
    r.assert_exit_saying(2, "a redirect from https to http://");
    assert!(plain.requests().is_empty(), "{:?}", plain.requests());
}
