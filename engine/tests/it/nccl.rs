//! NCCL as the engine loads it for tensor parallelism, against the real library (the PyPI wheel
//! nvidia-nccl-cu12 that scripts/fetch-nccl.sh caches for the rehash tests): NCCL runs its
//! bootstrap without a GPU, so loading, the version it reports and the communicator id every rank
//! derives from NCCL_COMM_ID are tested on any machine. The collectives need GPUs: see
//! engine/benches/GPU.md for the device check.

use std::path::PathBuf;

use rigaudit_engine::cuda::nccl;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The real libnccl.so.2: `RIGAUDIT_NCCL_LIB`, else the cache scripts/fetch-nccl.sh fills.
fn real_nccl() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RIGAUDIT_NCCL_LIB") {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("RIGAUDIT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rigaudit")))?;
    let found = std::fs::read_dir(cache.join("nccl"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("libnccl.so.2")))
        .find(|p| p.is_file());
    if found.is_none() && in_ci() {
        panic!("CI must have the real NCCL: scripts/fetch-nccl.sh");
    }
    found
}

#[test]
fn the_engine_loads_nccl_reads_its_version_and_derives_one_id_from_nccl_comm_id() {
    let Some(lib) = real_nccl() else {
        eprintln!("SKIPPED: the real NCCL library is absent: run scripts/fetch-nccl.sh");
        return;
    };
    // This test binary runs this one test: no other thread reads the environment.
    std::env::set_var("RIGAUDIT_NCCL", &lib);
    std::env::set_var("NCCL_COMM_ID", "127.0.0.1:29555");
    let n = nccl::load().unwrap_or_else(|e| panic!("{e}"));
    // The cache folder is named by the wheel's version, which NCCL reports as its own.
    let wheel = lib.parent().unwrap().file_name().unwrap().to_string_lossy();
    assert_eq!(n.version, wheel, "the version NCCL reports");
    assert_eq!(
        std::fs::canonicalize(&n.path).unwrap(),
        std::fs::canonicalize(&lib).unwrap(),
        "the file the loader mapped"
    );
    // Every rank calls ncclGetUniqueId with the same NCCL_COMM_ID: the ids must be equal, and
    // carry the port (29555 = 0x7373) of rank 0's address.
    let a = n.unique_id().unwrap();
    let b = n.unique_id().unwrap();
    assert_eq!(a.internal, b.internal, "one id for every rank");
    let bytes: Vec<u8> = a.internal.iter().map(|&c| c as u8).collect();
    assert!(bytes.windows(2).any(|w| w == [0x73, 0x73]), "{bytes:02x?}");
}
