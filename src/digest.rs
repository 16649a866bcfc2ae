//! The one sha256 plumbing of the CLI: hex of a digest and a file's sha256, streamed. The bundle
//! reader, the checkpoint fetch and rehash use it (rehash's parallel reader in `rehash/hash.rs`
//! builds on [`hex`]).

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

/// sha256 of a file, streamed; a path that is not a regular file (a FIFO, a device) is refused
/// rather than read without end.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = crate::input::open_regular(path, "file")
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.0))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}
