//! What a replayed (or running) server actually had mapped: per rank, its executable and every
//! file-backed mapping of it and its children, each hashed once, with the version the file itself
//! reports where it can. The CLI reads `/proc` and hashes ([`crate::loaded`] judges); these are
//! the records both sides share, and the JSON a report carries as `loaded`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one rank's server process tree had mapped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadedRank {
    /// The side of a comparison the rank served (`A`, `B`: `rigaudit ab`), when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// The rank (the card's numbering).
    pub rank: u32,
    /// The card's box the rank ran on.
    #[serde(rename = "box")]
    pub box_name: String,
    /// Where it was read: `this machine`, or the host it runs on.
    pub host: String,
    /// The server's process id on that host, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When it was read: `ready` (the server answered), `end` (after the last request).
    #[serde(default)]
    pub read_at: Vec<String>,
    /// Processes read (the server and its children).
    pub processes: u32,
    /// The loader's variables as the server process had them (`LD_LIBRARY_PATH`, `LD_PRELOAD`,
    /// `RIGAUDIT_NCCL`, `PYTHONPATH`, ...): what can put a library from elsewhere in place.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub loader_env: BTreeMap<String, String>,
    /// The executables and mapped files, by path.
    pub objects: Vec<LoadedObject>,
    /// What could not be read, and why (a process that refused, a box that did not answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<String>,
    /// The reads the server had exited before (`the server (pid 4242) had exited when it was to
    /// be read at end`): its end is the replay's to report; here it is a note.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gone: Vec<String>,
}

/// What a mapped file is to the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A process's executable (`/proc/PID/exe`).
    Executable,
    /// A shared object (an ELF file mapped by the loader or `dlopen`).
    Library,
    /// Any other mapped file (weights, a locale archive, a cache).
    Data,
}

/// One executable or mapped file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedObject {
    /// Its path, as the kernel names it.
    pub path: String,
    /// What it is to the process.
    pub role: Role,
    /// sha256 of the file (absent when it could not be read: see `problem`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// The ELF `DT_SONAME`, for a library that has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soname: Option<String>,
    /// The version the file itself reports (`NCCL 2.30.7` from its text), when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The package it belongs to, as the file or its folder says (`torch 2.5.1` from a Python
    /// package's metadata, `deb libc6 2.36-9` from the ELF package note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// When it was seen mapped: `ready`, `end`, or both.
    #[serde(default)]
    pub seen: Vec<String>,
    /// Why its digest is not (or not surely) of what was mapped: deleted since, replaced since,
    /// unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl LoadedObject {
    /// The file name (the last part of the path).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// Whether it is an NCCL runtime (`libnccl.so`, `libnccl.so.2`, `libnccl.so.2.30.7`), not a
    /// plugin (`libnccl-net.so`).
    pub fn is_nccl(&self) -> bool {
        self.name().starts_with("libnccl.so")
    }
}
