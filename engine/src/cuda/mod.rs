//! The engine on an NVIDIA GPU (`serve --device cuda[:N]`) through cudarc, loaded at run time:
//! the binary builds and runs where CUDA is absent, and says so when asked for a GPU that is not
//! there. cudarc panics when a library it needs cannot be loaded, so every first use goes through
//! [`load_driver`] / [`load_nvrtc`], which try the libraries themselves and answer with an error.
//!
//! The kernels (`kernels.cu`, CUDA C) are compiled by NVRTC at start-up for the device's
//! architecture and cached by digest ([`compile_ptx`]); [`model`] runs the forward pass on them.

pub mod bench;
pub mod model;
pub mod nccl;
pub mod nvml;
pub mod serve;
pub mod shard;
pub mod tp;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The CUDA C source of every kernel.
pub const KERNELS: &str = include_str!("kernels.cu");

/// The kernels [`model`] launches, by name (each must be in the compiled module).
pub const KERNEL_NAMES: &[&str] = &[
    "quantize_q8",
    "rmsnorm_q8",
    "silu_mul_q8",
    "mv_q4_1",
    "mm_q4_1",
    "mv_q4_1_w32",
    "mv_q8_0",
    "mm_q8_0",
    "embed_q8_0",
    "rope_store",
    "attention",
    "argmax_rows",
    "copy_u4",
];

/// Where the forward pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The CPU engine.
    Cpu,
    /// CUDA device number N.
    Cuda(usize),
}

impl std::str::FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(|| format!("{s:?}: expected cpu, cuda or cuda:N (N a device number)")),
        }
    }
}

/// The library names cudarc tries for `lib` (`cuda`, `nvrtc`), in its order.
fn candidates(lib: &str) -> Vec<String> {
    cudarc::get_lib_name_candidates(lib)
}

/// Opens the first of `names` the loader finds and keeps it loaded for the process (so cudarc's
/// own `dlopen` of the same name finds it); the name opened, or the last loader error.
fn open_first(names: &[String]) -> Result<String, String> {
    let mut last = String::from("no candidate names");
    for name in names {
        // SAFETY: loading a CUDA library runs its initialisers, which have no preconditions.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => {
                std::mem::forget(lib);
                return Ok(name.clone());
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// Loads the CUDA driver library (once per process), or says it is missing.
pub fn load_driver() -> Result<String, String> {
    static DRIVER: OnceLock<Result<String, String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            open_first(&candidates("cuda")).map_err(|e| {
                format!("no CUDA driver found (libcuda.so.1): {e}; this machine has no NVIDIA driver: use --device cpu")
            })
        })
        .clone()
}

/// Folders NVRTC is looked for in when the loader's path lacks it: `$CUDA_PATH`, `$CUDA_HOME`
/// and `/usr/local/cuda*` (newest first), each with `lib64`, `lib` and `targets/x86_64-linux/lib`.
fn nvrtc_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    let mut local: Vec<PathBuf> = std::fs::read_dir("/usr/local")
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("cuda"))
                })
                .collect()
        })
        .unwrap_or_default();
    local.sort_by(|a, b| b.cmp(a));
    roots.extend(local);
    roots
        .iter()
        .flat_map(|r| ["lib64", "lib", "targets/x86_64-linux/lib"].map(|s| r.join(s)))
        .collect()
}

/// The `libnvrtc.so.MAJOR` files in `dir`, the highest major first.
fn nvrtc_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter_map(|p| {
                    let name = p.file_name()?.to_string_lossy().into_owned();
                    let major = name.strip_prefix("libnvrtc.so.")?.parse().ok()?;
                    Some((major, p))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, p)| p).collect()
}

/// Loads NVRTC from the file `path`, after the `libnvrtc-builtins.so.*` beside it (NVRTC opens
/// that by name at compile time, and the loader would not look beside NVRTC for it).
fn open_nvrtc_file(path: &Path) -> Result<String, String> {
    if let Some(dir) = path.parent() {
        let builtins: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name().is_some_and(|n| {
                            n.to_string_lossy().starts_with("libnvrtc-builtins.so.")
                        })
                    })
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let _ = open_first(&builtins);
    }
    open_first(&[path.to_string_lossy().into_owned()])
}

/// Loads NVRTC (once per process): `$RIGAUDIT_NVRTC` (a file), else the loader's path, else the
/// folders of [`nvrtc_dirs`]; the library loaded, or why none was.
pub fn load_nvrtc() -> Result<String, String> {
    static NVRTC: OnceLock<Result<String, String>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("RIGAUDIT_NVRTC") {
                return open_nvrtc_file(Path::new(&p)).map_err(|e| {
                    format!("RIGAUDIT_NVRTC={}: cannot load NVRTC: {e}", p.to_string_lossy())
                });
            }
            if let Ok(name) = open_first(&candidates("nvrtc")) {
                return Ok(name);
            }
            let mut last = String::from("none found");
            for file in nvrtc_dirs().iter().flat_map(|d| nvrtc_in(d)) {
                match open_nvrtc_file(&file) {
                    Ok(name) => return Ok(name),
                    Err(e) => last = e,
                }
            }
            Err(last).map_err(|e| {
                format!("no NVRTC found (libnvrtc.so.13) on the loader's path, under $CUDA_PATH, $CUDA_HOME or /usr/local/cuda*: {e}; set RIGAUDIT_NVRTC to its path, or use --device cpu")
            })
        })
        .clone()
}

/// Runs `f`, turning a panic inside cudarc into an error naming `what`.
pub fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("{what}: {msg}"))
    })
}

/// The folder compiled kernels are cached in: `$RIGAUDIT_CACHE/ptx`, else
/// `$XDG_CACHE_HOME/rigaudit/ptx`, else `~/.cache/rigaudit/ptx`.
fn ptx_cache_dir() -> PathBuf {
    if let Some(c) = std::env::var_os("RIGAUDIT_CACHE") {
        return PathBuf::from(c).join("ptx");
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache")
        });
    base.join("rigaudit/ptx")
}

/// PTX of [`KERNELS`] for `arch` (`compute_90`), compiled by NVRTC or read from the cache, where
/// it sits under the digest of the source, the architecture and the NVRTC library; and whether
/// it came from the cache.
pub fn compile_ptx(arch: &str) -> Result<(String, bool), String> {
    compile_ptx_in(&ptx_cache_dir(), arch)
}

/// As [`compile_ptx`], with the cache in folder `dir`.
pub fn compile_ptx_in(dir: &Path, arch: &str) -> Result<(String, bool), String> {
    let lib = load_nvrtc()?;
    let key = format!(
        "{:x}",
        Sha256::digest(format!("{arch}\n{lib}\n{KERNELS}").as_bytes())
    );
    let path = dir.join(format!("{key}.ptx"));
    if let Ok(ptx) = std::fs::read_to_string(&path) {
        return Ok((ptx, true));
    }
    let ptx = compile_kernels(arch)?;
    // A cache that cannot be written only costs the next start a compile.
    let _ = write_atomically(&path, ptx.as_bytes());
    Ok((ptx, false))
}

/// PTX of [`KERNELS`] for `arch` (`compute_90`), compiled by NVRTC now (no cache).
pub fn compile_kernels(arch: &str) -> Result<String, String> {
    load_nvrtc()?;
    guarded("NVRTC", || {
        let opts = cudarc::nvrtc::CompileOptions {
            options: vec![format!("--gpu-architecture={arch}"), "-std=c++17".into()],
            name: Some("kernels.cu".into()),
            ..Default::default()
        };
        cudarc::nvrtc::compile_ptx_with_opts(KERNELS, opts)
            .map(|p| p.to_src())
            .map_err(|e| format!("kernels.cu does not compile for {arch}: {e}"))
    })
}

/// Writes `bytes` to `path` through a temporary file beside it, renamed into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!("cpu".parse::<Device>(), Ok(Device::Cpu));
        assert_eq!("cuda".parse::<Device>(), Ok(Device::Cuda(0)));
        assert_eq!("cuda:3".parse::<Device>(), Ok(Device::Cuda(3)));
        let e = "gpu".parse::<Device>().unwrap_err();
        assert!(e.contains("expected cpu, cuda or cuda:N"), "{e}");
        assert!("cuda:x".parse::<Device>().is_err());
    }

    #[test]
    fn every_launched_kernel_is_defined_in_the_source() {
        for name in KERNEL_NAMES {
            let def = format!("void {name}(");
            let by_macro = format!("({name}, ");
            assert!(
                KERNELS.contains(&def) || KERNELS.contains(&by_macro),
                "{name} not in kernels.cu"
            );
        }
    }

    #[test]
    fn nvrtc_files_are_found_highest_major_first() {
        let dir = std::env::temp_dir().join(format!("nvrtc-find-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "libnvrtc.so.12",
            "libnvrtc.so.13",
            "libnvrtc-builtins.so.13.0",
        ] {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        let found = nvrtc_in(&dir);
        let names: Vec<_> = found.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["libnvrtc.so.13", "libnvrtc.so.12"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
