//! NCCL for tensor parallelism, loaded at run time: the library, its version as it reports it, a
//! communicator over the world's ranks, and the two collectives the forward pass uses (a sum
//! all-reduce of f32 and a broadcast of i32 from rank 0).
//!
//! The types and constants are cudarc's (`cudarc::nccl::sys`, feature `nccl`); the loader is ours,
//! for two reasons. cudarc 0.19 looks for the library under the names `libnccl.so`,
//! `libnccl.so.13`, `.12`, `.11`, ... but never `libnccl.so.2`, the name every NCCL runtime
//! installs (Debian's and Ubuntu's libnccl2, NVIDIA's packages, the PyPI wheels); and it panics
//! when it finds none, or when a symbol is missing. Here the library is `$RIGAUDIT_NCCL` (a file),
//! else `libnccl.so.2` or `libnccl.so` on the loader's path (so `LD_LIBRARY_PATH`, as the seed
//! pages set it), every symbol is looked up at load, and each failure is an error naming it.
//! Results are read as plain integers, never as cudarc's enum (a code a newer NCCL adds would
//! otherwise be undefined behaviour).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use cudarc::driver::CudaStream;
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};

type Stream = *mut c_void;

/// The NCCL functions the engine calls, resolved at load.
struct Fns {
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> c_int,
    init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> c_int,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        Stream,
    ) -> c_int,
    broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        Stream,
    ) -> c_int,
    group_start: unsafe extern "C" fn() -> c_int,
    group_end: unsafe extern "C" fn() -> c_int,
    async_error: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> c_int,
    abort: unsafe extern "C" fn(ncclComm_t) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
}

/// The loaded library.
pub struct Nccl {
    fns: Fns,
    /// The version it reports (`2.28.3`).
    pub version: String,
    /// The file the loader mapped (from `/proc/self/maps`), or the name it was asked for.
    pub path: String,
}

/// `ncclGetVersion`'s code as `major.minor.patch` (2.9 and later: `major*10000 + minor*100 +
/// patch`; before: `major*1000 + minor*100 + patch`).
pub fn version_text(code: i32) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100)
    }
}

/// The names tried, in order: `$RIGAUDIT_NCCL`, else the runtime's soname and the dev link.
fn names() -> Vec<String> {
    match std::env::var("RIGAUDIT_NCCL") {
        Ok(p) if !p.is_empty() => vec![p],
        _ => vec!["libnccl.so.2".into(), "libnccl.so".into()],
    }
}

/// The file mapped into this process whose name starts with `libnccl`.
fn mapped_path() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            std::path::Path::new(p)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libnccl"))
        })
        .map(str::to_string)
}

/// Resolves every symbol of [`Fns`] in `lib`.
///
/// # Safety
/// `lib` must be an NCCL library: the symbols are given NCCL's documented signatures.
unsafe fn resolve(lib: &libloading::Library) -> Result<Fns, String> {
    fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
        // SAFETY: the caller vouches that `lib` is NCCL and `T` the symbol's signature.
        unsafe { lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("the NCCL library lacks {name}: {e}"))
    }
    Ok(Fns {
        get_version: sym(lib, "ncclGetVersion")?,
        get_unique_id: sym(lib, "ncclGetUniqueId")?,
        init_rank: sym(lib, "ncclCommInitRank")?,
        all_reduce: sym(lib, "ncclAllReduce")?,
        broadcast: sym(lib, "ncclBroadcast")?,
        group_start: sym(lib, "ncclGroupStart")?,
        group_end: sym(lib, "ncclGroupEnd")?,
        async_error: sym(lib, "ncclCommGetAsyncError")?,
        abort: sym(lib, "ncclCommAbort")?,
        error_string: sym(lib, "ncclGetErrorString")?,
    })
}

/// Loads NCCL once per process, or says why it could not.
pub fn load() -> Result<&'static Nccl, String> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<Nccl, String> {
    let mut last = String::new();
    let tried = names();
    for name in tried.clone() {
        // SAFETY: loading runs the library's initialisers, which have no preconditions.
        let lib = match unsafe { libloading::Library::new(&name) } {
            Ok(lib) => lib,
            Err(e) => {
                last = format!("{name}: {e}");
                continue;
            }
        };
        // SAFETY: a library named libnccl is taken to be NCCL; a symbol missing is an error.
        let fns = unsafe { resolve(&lib) }?;
        let mut code = 0;
        // SAFETY: ncclGetVersion writes one int.
        check(
            &fns,
            unsafe { (fns.get_version)(&mut code) },
            "ncclGetVersion",
        )?;
        // The library stays loaded for the process: its functions are called until exit.
        std::mem::forget(lib);
        return Ok(Nccl {
            fns,
            version: version_text(code),
            path: mapped_path().unwrap_or(name),
        });
    }
    Err(format!(
        "no NCCL library found (tried {}; {last}): install NCCL 2 (libnccl2), put the folder of libnccl.so.2 on LD_LIBRARY_PATH, or set RIGAUDIT_NCCL to its path",
        tried.join(", ")
    ))
}

/// `Ok` for `ncclSuccess`, else an error naming `what` and NCCL's words for `code`.
fn check(fns: &Fns, code: c_int, what: &str) -> Result<(), String> {
    if code == 0 {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a static string for any code.
    let text = unsafe { (fns.error_string)(code) };
    let text = match text.is_null() {
        true => String::from("?"),
        // SAFETY: a non-null result is a NUL-terminated static string.
        false => unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    };
    Err(format!("NCCL {what}: error {code} ({text})"))
}

impl Nccl {
    /// A communicator id: with `NCCL_COMM_ID` set, NCCL builds it from that address, the same on
    /// every rank (rank 0 listens there); without, a fresh one (only a world of 1 can use it).
    pub fn unique_id(&self) -> Result<ncclUniqueId, String> {
        let mut id = ncclUniqueId { internal: [0; 128] };
        // SAFETY: writes one ncclUniqueId.
        check(
            &self.fns,
            unsafe { (self.fns.get_unique_id)(&mut id) },
            "ncclGetUniqueId",
        )?;
        Ok(id)
    }

    /// Joins rank `rank` of `world` to the communicator `id` on the current CUDA device (blocks
    /// until every rank has joined).
    pub fn join(
        &'static self,
        id: ncclUniqueId,
        rank: usize,
        world: usize,
    ) -> Result<Comm, String> {
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: writes one communicator handle; the current CUDA context is the rank's device.
        let code = unsafe { (self.fns.init_rank)(&mut raw, world as c_int, id, rank as c_int) };
        check(&self.fns, code, "ncclCommInitRank")?;
        Ok(Comm { nccl: self, raw })
    }
}

/// A communicator: one rank's handle on the world. Dropped, it is aborted (which also ends any
/// collective still waiting on a rank that is gone).
pub struct Comm {
    nccl: &'static Nccl,
    raw: ncclComm_t,
}

// SAFETY: the engine's scheduler thread alone uses the communicator once it is moved there.
unsafe impl Send for Comm {}

impl Comm {
    /// Sums `count` f32 at device address `buf` over the ranks, in place, on `stream`.
    pub fn all_reduce_sum(
        &self,
        buf: u64,
        count: usize,
        stream: &CudaStream,
    ) -> Result<(), String> {
        let p = buf as *mut c_void;
        let stream = stream.cu_stream() as Stream;
        let (f32s, sum) = (ncclDataType_t::ncclFloat32, ncclRedOp_t::ncclSum);
        // SAFETY: `buf` is a live device allocation of at least `count` f32.
        let code = unsafe { (self.nccl.fns.all_reduce)(p, p, count, f32s, sum, self.raw, stream) };
        check(&self.nccl.fns, code, "ncclAllReduce")
    }

    /// Copies rank 0's `count` i32 at each device address of `bufs` to the other ranks', in one
    /// group, on `stream`.
    pub fn broadcast_i32(&self, bufs: &[(u64, usize)], stream: &CudaStream) -> Result<(), String> {
        let f = &self.nccl.fns;
        let stream = stream.cu_stream() as Stream;
        // SAFETY: a group brackets the calls; every address is a live device allocation.
        check(f, unsafe { (f.group_start)() }, "ncclGroupStart")?;
        let mut first_err = Ok(());
        for &(buf, count) in bufs {
            let p = buf as *mut c_void;
            let i32s = ncclDataType_t::ncclInt32;
            // SAFETY: as above.
            let code = unsafe { (f.broadcast)(p, p, count, i32s, 0, self.raw, stream) };
            first_err = first_err.and(check(f, code, "ncclBroadcast"));
        }
        // SAFETY: closes the group opened above.
        let end = check(f, unsafe { (f.group_end)() }, "ncclGroupEnd");
        first_err.and(end)
    }

    /// An error NCCL met asynchronously (a peer gone, a network failure), if any.
    pub fn async_error(&self) -> Result<(), String> {
        let mut code = 0;
        // SAFETY: writes one int.
        let call = unsafe { (self.nccl.fns.async_error)(self.raw, &mut code) };
        check(&self.nccl.fns, call, "ncclCommGetAsyncError")?;
        check(&self.nccl.fns, code, "communicator")
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: the handle came from ncclCommInitRank and is aborted once.
        unsafe { (self.nccl.fns.abort)(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_codes_read_as_nccl_writes_them() {
        assert_eq!(version_text(22803), "2.28.3");
        assert_eq!(version_text(23007), "2.30.7");
        assert_eq!(version_text(2804), "2.8.4");
    }
}
